#!/usr/bin/env python3
"""Writes the fuzz targets' seed inputs into Fuzz/corpus/<target>/ (valid inputs from the
protocol document's example frames, real IIO scan types, manifests and configurations shaped
like the test fixtures). Run once; scripts/fuzz.sh then grows and minimizes the corpora."""
import hashlib, json, os, re, struct, plistlib, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Fuzz", "corpus")

def save(target, data):
    folder = os.path.join(OUT, target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)

def frame(kind, payload):
    return struct.pack("<I", len(payload) + 1) + bytes([kind]) + payload

# Wire: every ```hex block of docs/protocol.md is one frame; requests of every operation, some
# with the extreme numbers a hostile client sends.
doc = open(os.path.join(ROOT, "docs", "protocol.md"), encoding="utf-8").read()
frames = []
for block in re.findall(r"```hex[^\n]*\n(.*?)```", doc, re.S):
    data = bytes.fromhex("".join(line.split("#")[0] for line in block.splitlines()))
    frames.append(data)
    save("wire", data)
save("wire", b"".join(frames))
ops = ["hello", "status", "requestAuthorization", "startRecording", "stopRecording", "fetchDevices", "fetch",
       "cancel", "ack", "daemonStatus", "sensors", "devices", "apps", "consentList", "consentDecide", "stakes"]
big = 2**63 - 1
for i, op in enumerate(ops):
    save("wire", frame(1, json.dumps({"id": i + 1, "op": op, "v": 1, "app": "org.example.study",
                                      "sensor": "accelerometer"}).encode()))
for fields in [{"from": 0, "to": big}, {"from": -big - 1, "to": big}, {"from": big, "to": big},
               {"from": 0, "to": big, "window": big, "chunkFormats": [1, -1]},
               {"from": 0, "to": 1e300}, {"target": 4294967295, "batches": -big - 1}]:
    request = {"id": 7, "op": "fetch", "sensor": "accelerometer", "device": "x"} | fields
    save("wire", frame(1, json.dumps(request).encode()))
save("wire", frame(1, json.dumps({"id": 9, "op": "consentDecide", "app": "a", "decisions": {"accelerometer": True}}).encode()))

# Scan types as drivers print them.
types = ["le:s12/16>>4", "be:s12/16>>4", "le:s16/16>>0", "be:s16/16>>0", "le:s13/16>>0\n", "le:s32/32>>0",
         "le:u24/32>>8", "le:u32/32X2>>0", "le:s48/64>>2", "le:s64/64>>0", "le:u64/64>>0", "le:u8/8>>0",
         "le:s8/8>>0", "le:u16/16>>0", "le:s32/32X4>>0"]
for t in types:
    save("scan-type", t.encode())

# Scans: type lines, a zero byte, then scan bytes.
def bmi160_scans(count):
    out = b""
    for i in range(count):
        out += struct.pack("<6h", i, -i, 7, 1000 + i, -16392 + i, 40) + b"\xa5" * 4 + struct.pack("<q", 7_000_000_000 + i * 10_000_000)
    return out
six = "\n".join(["le:s16/16>>0"] * 6 + ["le:s64/64>>0"]).encode()
save("scan", six + b"\0" + bmi160_scans(20))
save("scan", six + b"\0" + bmi160_scans(3) + b"\xff" * 8 + struct.pack("<q", big) + b"\0" * 24)
save("scan", b"le:s12/16>>4\nbe:s12/16>>4\nle:s12/16>>4\nle:s64/64>>0\0" + bytes(range(256)))
save("scan", b"le:u24/32>>8\nle:u32/32X2>>0\0" + bytes(range(255, -1, -1)))
save("scan", b"le:s48/64>>2\nle:u8/8>>0\nle:s32/32X4>>0\0" + b"\x80" * 200)

# Manifests: Info.plist, entitlements and binding separated by two zero bytes (XML plists have none).
def manifest(info, entitlements, binding, fmt=plistlib.FMT_XML):
    return b"\0\0".join(plistlib.dumps(p, fmt=fmt) for p in (info, entitlements, binding))
info = {"NSSensorKitUsageDescription": "Sleep and activity study", "NSSensorKitPrivacyPolicyURL": "https://example.org/privacy",
        "NSSensorKitUsageDetail": {"SRSensorAccelerometer": {"Description": "steps", "Required": True}}}
entitled = {"com.apple.developer.sensorkit.reader.allow": ["accelerometer", "gyroscope", "ambient-light-sensor"]}
save("manifest", manifest(info, entitled, {"Users": ["study", "1001"], "Executable": "/usr/bin/study"}))
save("manifest", manifest(info, entitled, {"Users": ["study"], "Consenters": ["0"]}))
save("manifest", manifest({}, {"com.apple.developer.sensorkit.reader.allow": []}, {"Users": []}))
save("manifest", manifest(info, entitled, {"Users": ["study"]}, fmt=plistlib.FMT_BINARY).replace(b"\0\0", b"\0\1"))
save("manifest", b"<plist><dict><key>NSSensorKitUsageDetail</key><string>oops</string></dict></plist>\0\0\0\0")

# Configurations: the documented example and pieces of it.
conf = """profile = study
[store]
hold = 24h
window = 7d
max-bytes = 20G
min-free = 512M
[sensor accelerometer]
hold = 0
window = 3d
[grant com.example.rig]
sensors = accelerometer, rotationRate
[iio]
ignore = iio:device3
remote = ip:rig.local
"""
save("configuration", conf.encode())
save("configuration", b"profile = lab\n[store]\nhold = 9223372036854775807ns\nwindow = 106751d\nmax-bytes = 8388607T\n")
save("configuration", b"# comment\n\n[sensor rotationRate]\nwindow = 250ms\nhold = 90s # trailing\n")
save("configuration", b"[store]\nmax-bytes = 4096\nmin-free = 0\nwindow = 1us\n")
print("seeded", OUT, file=sys.stderr)
