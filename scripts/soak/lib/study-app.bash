# Sourced by the soak scripts (not run by itself: `make soak` runs scripts/soak/*.sh only).
# write_study_app APPS_DIR APP PURPOSE ENTITLEMENTS USERS
#   A study app's manifest folder APPS_DIR/APP: Info.plist with PURPOSE as its
#   NSSensorKitUsageDescription, App.entitlements allowing ENTITLEMENTS (space-separated Apple
#   entitlement strings), Binding.plist letting USERS (space-separated user names) act as it.
write_study_app() {
  local folder=$1/$2 purpose=$3 entitlement user allowed="" users=""
  for entitlement in $4; do allowed+="<string>$entitlement</string>"; done
  for user in $5; do users+="<string>$user</string>"; done
  mkdir -p "$folder"
  cat > "$folder/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict><key>NSSensorKitUsageDescription</key><string>$purpose</string></dict></plist>
PLIST
  cat > "$folder/App.entitlements" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>com.apple.developer.sensorkit.reader.allow</key><array>$allowed</array>
</dict></plist>
PLIST
  cat > "$folder/Binding.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict><key>Users</key><array>$users</array></dict></plist>
PLIST
}

# stop_group PID: SIGTERM to the process group PID leads, a second to stop, then SIGKILL.
stop_group() {
  [ -n "$1" ] || return 0
  kill -TERM -- "-$1" 2>/dev/null || true
  sleep 1
  kill -KILL -- "-$1" 2>/dev/null || true
}
