// System-library shim: BlueZ's Bluetooth and HCI socket headers (AF_BLUETOOTH, BTPROTO_HCI,
// sockaddr_hci, HCI_CHANNEL_USER), nothing else.
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
