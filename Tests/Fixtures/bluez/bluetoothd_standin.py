#!/usr/bin/python3
"""A bluetoothd stand-in for the bluez transport's tests (docs/ble.md, "The bluez transport").

Usage: bluetoothd_standin.py BUS_ADDRESS EMULATED_DIR [--adapter-asked=SECONDS | --adapter-withheld]

Owns org.bluez on the private bus BUS_ADDRESS and exports BlueZ's documented interfaces
(bluez doc/org.bluez.*.rst): ObjectManager at /, AgentManager1 at /org/bluez, Adapter1 at
/org/bluez/hci0, Device1 (+ Battery1) per peripheral, GattService1 / GattCharacteristic1 per
discovered attribute with ReadValue, WriteValue, AcquireNotify (a SOCK_SEQPACKET fd and the MTU)
and StartNotify / StopNotify. It is backed by the emulated peripherals of EMULATED_DIR
(ADDR.adv, ADDR.att): it connects to ADDR.att as an ATT client, as bluetoothd does over L2CAP,
exchanges the MTU, discovers services, characteristics and descriptors, and serves what it found,
so the bytes a test's peripheral sends are the bytes the daemon receives. As bluetoothd does, it
keeps the Battery Service (0x180F) to itself and exports Battery1.Percentage instead.

Knobs for tests, on /org/sensorkit/StandIn (interface org.sensorkit.StandIn): refuse the next
AcquireNotify of a UUID with an error name, a StopNotify by "another client" (closes the acquired
socket, as BlueZ does), a device that wants pairing, a paired and connected keyboard of the
user's own, hostile property values, and counters of what was called (also per device address,
"Connect:ADDRESS", and per characteristic UUID, "StartNotify:UUID", "notification:fd:UUID").

Both options hold Adapter1 back, as bluetoothd does at boot until the kernel reports the
controller: org.bluez is owned at once, /org/bluez/hci0 answers as an unknown object, and the
adapter is exported (announced with InterfacesAdded) SECONDS after the first call on that path
(--adapter-asked: "bluetoothd" is seen without it, then with it), or when the ExportAdapter knob
is called. Calls on the held-back path are counted ("withheld:MEMBER").
"""
import os
import socket
import struct
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

PROPS = "org.freedesktop.DBus.Properties"
OM = "org.freedesktop.DBus.ObjectManager"
ADAPTER = "org.bluez.Adapter1"
DEVICE = "org.bluez.Device1"
SERVICE = "org.bluez.GattService1"
CHAR = "org.bluez.GattCharacteristic1"
BATTERY = "org.bluez.Battery1"
AGENTS = "org.bluez.AgentManager1"
KNOBS = "org.sensorkit.StandIn"
ADAPTER_PATH = "/org/bluez/hci0"


def error(name, text=""):
    return dbus.exceptions.DBusException(text or name, name="org.bluez.Error." + name)


def uuid_text(raw):
    """On-air little-endian UUID bytes (2 or 16) -> BlueZ's lower-case 128-bit text."""
    if len(raw) == 2:
        return "0000%04x-0000-1000-8000-00805f9b34fb" % struct.unpack("<H", raw)[0]
    h = raw[::-1].hex()
    return "%s-%s-%s-%s-%s" % (h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])


def flags_of(props):
    names = [(0x02, "read"), (0x04, "write-without-response"), (0x08, "write"), (0x10, "notify"), (0x20, "indicate")]
    return dbus.Array([name for bit, name in names if props & bit], signature="s")


class ATTClient:
    """The ATT client side of one emulated peripheral's .att socket, request by request."""

    def __init__(self, path, on_value, on_closed):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.settimeout(5)
        self.sock.connect(path)
        self.on_value = on_value
        self.on_closed = on_closed
        self.mtu = 23
        self.watch = None

    def start_watch(self):
        self.watch = GLib.io_add_watch(self.sock.fileno(), GLib.IO_IN | GLib.IO_HUP | GLib.IO_ERR, self._readable)

    def _readable(self, fd, condition):
        try:
            self.sock.setblocking(False)
            while True:
                pdu = self.sock.recv(1024)
                if not pdu:
                    self._closed()
                    return False
                self._unsolicited(pdu)
        except BlockingIOError:
            return True
        except OSError:
            self._closed()
            return False
        finally:
            if self.sock.fileno() >= 0:
                self.sock.settimeout(5)

    def _closed(self):
        if self.watch is not None:
            GLib.source_remove(self.watch)
            self.watch = None
        self.close()
        self.on_closed()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def _unsolicited(self, pdu):
        if pdu[0] in (0x1B, 0x1D) and len(pdu) >= 3:
            handle = struct.unpack("<H", pdu[1:3])[0]
            if pdu[0] == 0x1D:
                self.sock.send(b"\x1e")
            self.on_value(handle, bytes(pdu[3:]))
            return True
        return False

    def request(self, pdu):
        self.sock.send(pdu)
        while True:
            answer = self.sock.recv(1024)
            if not answer:
                raise OSError("peripheral closed the ATT socket")
            if not self._unsolicited(answer):
                return answer

    def exchange_mtu(self, wanted=247):
        answer = self.request(struct.pack("<BH", 0x02, wanted))
        if answer[0] == 0x03:
            self.mtu = max(23, min(wanted, struct.unpack("<H", answer[1:3])[0]))
        return self.mtu

    def _list(self, opcode, start, end, tail):
        entries = []
        while start <= end:
            answer = self.request(struct.pack("<BHH", opcode, start, end) + tail)
            if answer[0] == 0x01:
                break
            if opcode == 0x04:
                size = 4 if answer[1] == 1 else 18
                body = answer[2:]
            else:
                size = answer[1]
                body = answer[2:]
            chunk = [body[i:i + size] for i in range(0, len(body) - size + 1, size)]
            if not chunk:
                break
            entries += chunk
            last = struct.unpack("<H", chunk[-1][2:4] if opcode == 0x10 else chunk[-1][0:2])[0]
            if last >= end:
                break
            start = last + 1
        return entries

    def discover(self):
        """[(service uuid, [(uuid, props, value handle, cccd handle or None)])], by handle order."""
        services = []
        for entry in self._list(0x10, 1, 0xFFFF, struct.pack("<H", 0x2800)):
            start, end = struct.unpack("<HH", entry[0:4])
            services.append((entry[4:], start, end))
        result = []
        for uuid, start, end in services:
            declarations = []
            for entry in self._list(0x08, start, end, struct.pack("<H", 0x2803)):
                declaration = struct.unpack("<H", entry[0:2])[0]
                props = entry[2]
                value = struct.unpack("<H", entry[3:5])[0]
                declarations.append((declaration, props, value, entry[5:]))
            characteristics = []
            for index, (declaration, props, value, cuuid) in enumerate(declarations):
                last = declarations[index + 1][0] - 1 if index + 1 < len(declarations) else end
                cccd = None
                if props & 0x30 and value < last:
                    for info in self._list(0x04, value + 1, last, b""):
                        if info[2:] == b"\x02\x29":
                            cccd = struct.unpack("<H", info[0:2])[0]
                characteristics.append((cuuid, props, value, cccd))
            result.append((uuid, characteristics))
        return result

    def read(self, handle):
        answer = self.request(struct.pack("<BH", 0x0A, handle))
        if answer[0] != 0x0B:
            raise error("Failed", "ATT error 0x%02x" % (answer[4] if len(answer) > 4 else 0))
        return answer[1:]

    def write(self, handle, value):
        answer = self.request(struct.pack("<BH", 0x12, handle) + bytes(value))
        if answer[0] != 0x13:
            raise error("Failed", "ATT error 0x%02x" % (answer[4] if len(answer) > 4 else 0))


class Exported(dbus.service.Object):
    """An object with properties per interface, Properties.Get/GetAll/Set and PropertiesChanged."""

    def __init__(self, standin, path, interfaces):
        super().__init__(standin.bus, path)
        self.standin = standin
        self.path = path
        self.interfaces = interfaces

    def set(self, interface, **values):
        self.interfaces[interface].update(values)
        self.PropertiesChanged(interface, values, dbus.Array([], signature="s"))

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        return self.interfaces[interface][name]

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return self.interfaces.get(interface, {})

    @dbus.service.method(PROPS, in_signature="ssv", out_signature="")
    def Set(self, interface, name, value):
        raise dbus.exceptions.DBusException("read-only", name="org.freedesktop.DBus.Error.PropertyReadOnly")

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


class Adapter(Exported):
    def __init__(self, standin):
        super().__init__(standin, ADAPTER_PATH, {ADAPTER: {
            "Address": dbus.String("00:1A:7D:DA:71:13"), "AddressType": dbus.String("public"),
            "Name": dbus.String("standin"), "Powered": dbus.Boolean(True), "Discovering": dbus.Boolean(False),
            "UUIDs": dbus.Array([], signature="s")}})

    @dbus.service.method(ADAPTER, in_signature="a{sv}", out_signature="")
    def SetDiscoveryFilter(self, filter):
        self.standin.count("SetDiscoveryFilter")
        self.standin.filter = {str(k): v for k, v in filter.items()}

    @dbus.service.method(ADAPTER, in_signature="", out_signature="")
    def StartDiscovery(self):
        self.standin.count("StartDiscovery")
        if self.interfaces[ADAPTER]["Discovering"]:
            raise error("InProgress", "Operation already in progress")
        self.set(ADAPTER, Discovering=dbus.Boolean(True))
        self.standin.scan()

    @dbus.service.method(ADAPTER, in_signature="", out_signature="")
    def StopDiscovery(self):
        self.standin.count("StopDiscovery")
        if not self.interfaces[ADAPTER]["Discovering"]:
            raise error("Failed", "No discovery started")
        self.set(ADAPTER, Discovering=dbus.Boolean(False))


class Withheld(dbus.service.FallbackObject):
    """/org/bluez/hci0 (and below) while the adapter is held back: answers as bluetoothd does for
    an object it does not export, and counts the calls."""

    def __init__(self, standin, export_when_asked):
        super().__init__(standin.bus, ADAPTER_PATH)
        self.standin = standin
        self.export_when_asked = export_when_asked

    def refuse(self, member):
        self.standin.count("withheld:" + member)
        if self.export_when_asked:
            self.export_when_asked = False
            GLib.timeout_add(int(self.standin.asked_delay * 1000), self.standin.export_adapter)
        return dbus.exceptions.DBusException(
            "Method \"%s\" doesn't exist" % member, name="org.freedesktop.DBus.Error.UnknownObject")

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        raise self.refuse("Get")

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        raise self.refuse("GetAll")


class AgentManager(Exported):
    def __init__(self, standin):
        super().__init__(standin, "/org/bluez", {AGENTS: {}})

    @dbus.service.method(AGENTS, in_signature="os", out_signature="", sender_keyword="sender")
    def RegisterAgent(self, agent, capability, sender=None):
        self.standin.count("RegisterAgent:" + str(capability))
        if sender in self.standin.agents_by_sender:
            raise error("AlreadyExists", "Already Exists")
        self.standin.agents_by_sender[sender] = str(agent)

    @dbus.service.method(AGENTS, in_signature="o", out_signature="")
    def RequestDefaultAgent(self, agent):
        self.standin.count("RequestDefaultAgent")

    @dbus.service.method(AGENTS, in_signature="o", out_signature="", sender_keyword="sender")
    def UnregisterAgent(self, agent, sender=None):
        self.standin.count("UnregisterAgent")
        self.standin.agents_by_sender.pop(sender, None)


class Device(Exported):
    def __init__(self, standin, address, name, uuids):
        path = ADAPTER_PATH + "/dev_" + address.replace(":", "_")
        super().__init__(standin, path, {DEVICE: {
            "Address": dbus.String(address), "AddressType": dbus.String("public"), "Name": dbus.String(name),
            "Alias": dbus.String(name), "Adapter": dbus.ObjectPath(ADAPTER_PATH),
            "UUIDs": dbus.Array(uuids, signature="s"), "RSSI": dbus.Int16(-58), "Paired": dbus.Boolean(False),
            "Trusted": dbus.Boolean(False), "Connected": dbus.Boolean(False),
            "ServicesResolved": dbus.Boolean(False)}})
        self.address = address
        self.needs_pairing = address in standin.pairing_required
        self.att = None
        self.children = []
        self.by_handle = {}

    def count(self, what):
        """Counted overall and per device ("Connect:ADDRESS"): tests check who was touched."""
        self.standin.count(what)
        self.standin.count(what + ":" + self.address)

    @dbus.service.method(DEVICE, in_signature="", out_signature="")
    def Connect(self):
        self.count("Connect")
        if self.interfaces[DEVICE]["Connected"]:
            return
        self.connect()

    def connect(self):
        path = os.path.join(self.standin.directory, self.address + ".att")
        try:
            self.att = ATTClient(path, self.value_arrived, self.lost)
            mtu = self.att.exchange_mtu()
            services = self.att.discover()
        except OSError as problem:
            self.att = None
            raise error("Failed", "le-connection-abort-by-local (%s)" % problem)
        self.set(DEVICE, Connected=dbus.Boolean(True))
        battery = None
        for index, (suuid, characteristics) in enumerate(services):
            if suuid == b"\x0f\x18":
                # bluetoothd's battery plugin claims the Battery Service: Battery1, not GATT objects.
                for cuuid, props, value, cccd in characteristics:
                    if cuuid == b"\x19\x2a":
                        battery = value
                continue
            spath = "%s/service%04x" % (self.path, index + 1)
            service = Exported(self.standin, spath, {SERVICE: {
                "UUID": dbus.String(uuid_text(suuid)), "Device": dbus.ObjectPath(self.path), "Primary": dbus.Boolean(True)}})
            self.add_child(service)
            for cuuid, props, value, cccd in characteristics:
                cpath = "%s/char%04x" % (spath, value)
                char = Characteristic(self.standin, self, cpath, spath, uuid_text(cuuid), props, value, cccd, mtu)
                self.by_handle[value] = char
                self.add_child(char)
        if battery is not None:
            level = self.att.read(battery)
            self.interfaces[BATTERY] = {"Percentage": dbus.Byte(level[0] if level else 0)}
            self.standin.manager.InterfacesAdded(self.path, {BATTERY: self.interfaces[BATTERY]})
            self.battery_handle = battery
        self.att.start_watch()
        self.set(DEVICE, ServicesResolved=dbus.Boolean(True))

    def add_child(self, child):
        self.children.append(child)
        self.standin.manager.InterfacesAdded(child.path, child.interfaces)

    @dbus.service.method(DEVICE, in_signature="", out_signature="")
    def Disconnect(self):
        self.count("Disconnect")
        if self.att is not None:
            self.att.close()
            self.lost()

    @dbus.service.method(DEVICE, in_signature="", out_signature="", sender_keyword="sender")
    def Pair(self, sender=None):
        """As bluetoothd: the pairing client's own agent is asked (Just Works: RequestConfirmation)."""
        self.count("Pair")
        if self.interfaces[DEVICE]["Paired"]:
            raise error("AlreadyExists", "Already Exists")
        agent = self.standin.agents_by_sender.get(sender)
        if agent is None:
            raise error("AuthenticationFailed", "No agent")
        try:
            self.standin.bus.get_object(sender, agent).RequestConfirmation(
                dbus.ObjectPath(self.path), dbus.UInt32(0), dbus_interface="org.bluez.Agent1", timeout=10)
        except dbus.exceptions.DBusException as refusal:
            self.standin.count("agent refused")
            raise error("AuthenticationRejected", "agent: %s" % refusal.get_dbus_name())
        self.standin.count("agent confirmed")
        self.set(DEVICE, Paired=dbus.Boolean(True))

    def check_paired(self):
        if self.needs_pairing and not self.interfaces[DEVICE]["Paired"]:
            raise error("NotPermitted", "Not paired")

    def lost(self):
        self.att = None
        for char in self.children:
            if isinstance(char, Characteristic):
                char.drop_acquired()
        for child in reversed(self.children):
            self.standin.manager.InterfacesRemoved(child.path, dbus.Array(list(child.interfaces.keys()), signature="s"))
            child.remove_from_connection()
        self.children = []
        self.by_handle = {}
        if BATTERY in self.interfaces:
            del self.interfaces[BATTERY]
            self.standin.manager.InterfacesRemoved(self.path, dbus.Array([BATTERY], signature="s"))
        self.set(DEVICE, ServicesResolved=dbus.Boolean(False))
        self.set(DEVICE, Connected=dbus.Boolean(False))

    def value_arrived(self, handle, value):
        char = self.by_handle.get(handle)
        if char is not None:
            char.deliver(value)


class Characteristic(Exported):
    def __init__(self, standin, device, path, service, uuid, props, handle, cccd, mtu):
        super().__init__(standin, path, {CHAR: {
            "UUID": dbus.String(uuid), "Service": dbus.ObjectPath(service), "Flags": flags_of(props),
            "MTU": dbus.UInt16(mtu), "Notifying": dbus.Boolean(False), "NotifyAcquired": dbus.Boolean(False)}})
        self.device = device
        self.uuid = uuid
        self.props = props
        self.handle = handle
        self.cccd = cccd
        self.mtu = mtu
        self.acquired = None
        self.notifying = False

    def deliver(self, value):
        if self.acquired is not None:
            try:
                self.acquired.send(value)
                self.standin.count("notification:fd")
                self.standin.count("notification:fd:" + self.uuid)
                return
            except OSError:
                self.drop_acquired()
        if self.notifying:
            self.standin.count("notification:signal")
            self.standin.count("notification:signal:" + self.uuid)
            self.set(CHAR, Value=dbus.Array([dbus.Byte(b) for b in value], signature="y"))

    def drop_acquired(self):
        if self.acquired is not None:
            self.acquired.close()
            self.acquired = None
            self.interfaces[CHAR]["NotifyAcquired"] = dbus.Boolean(False)

    @dbus.service.method(CHAR, in_signature="a{sv}", out_signature="ay")
    def ReadValue(self, options):
        self.standin.count("ReadValue")
        self.device.check_paired()
        return dbus.Array([dbus.Byte(b) for b in self.device.att.read(self.handle)], signature="y")

    @dbus.service.method(CHAR, in_signature="aya{sv}", out_signature="")
    def WriteValue(self, value, options):
        self.standin.count("WriteValue:" + str(options.get("type", "")))
        self.device.check_paired()
        self.device.att.write(self.handle, bytes(value))

    @dbus.service.method(CHAR, in_signature="a{sv}", out_signature="hq")
    def AcquireNotify(self, options):
        self.standin.count("AcquireNotify")
        self.standin.count("AcquireNotify:" + self.uuid)
        self.device.check_paired()
        refusal = self.standin.refusals.pop(self.uuid, None)
        if refusal:
            raise dbus.exceptions.DBusException("refused by the test", name=refusal)
        if not self.props & 0x10:
            raise error("NotSupported", "Operation is not supported")
        if self.notifying:
            raise error("InProgress", "Notify already started")
        if self.acquired is not None:
            raise error("NotPermitted", "Notify acquired")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.device.att.write(self.cccd, b"\x01\x00")
        self.acquired = ours
        self.interfaces[CHAR]["NotifyAcquired"] = dbus.Boolean(True)
        fd = dbus.types.UnixFd(theirs.fileno())
        theirs.close()
        return (fd, dbus.UInt16(self.mtu))

    @dbus.service.method(CHAR, in_signature="", out_signature="")
    def StartNotify(self):
        self.standin.count("StartNotify")
        self.standin.count("StartNotify:" + self.uuid)
        self.device.check_paired()
        if self.notifying:
            raise error("InProgress", "Notify already started")
        if self.acquired is not None:
            raise error("NotPermitted", "Notify acquired")
        self.device.att.write(self.cccd, b"\x01\x00" if self.props & 0x10 else b"\x02\x00")
        self.notifying = True
        self.set(CHAR, Notifying=dbus.Boolean(True))

    @dbus.service.method(CHAR, in_signature="", out_signature="")
    def StopNotify(self):
        self.standin.count("StopNotify")
        self.stop_notify()

    def stop_notify(self):
        # As BlueZ 5.66: a StopNotify from any client also closes the acquired socket.
        self.drop_acquired()
        if self.notifying:
            self.notifying = False
            self.set(CHAR, Notifying=dbus.Boolean(False))
        if self.device.att is not None and self.cccd is not None:
            self.device.att.write(self.cccd, b"\x00\x00")


class Manager(dbus.service.Object):
    def __init__(self, standin):
        super().__init__(standin.bus, "/")
        self.standin = standin

    @dbus.service.method(OM, in_signature="", out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        self.standin.count("GetManagedObjects")
        result = {}
        for thing in self.standin.everything():
            result[thing.path] = thing.interfaces
        return result

    @dbus.service.signal(OM, signature="oa{sa{sv}}")
    def InterfacesAdded(self, path, interfaces):
        pass

    @dbus.service.signal(OM, signature="oas")
    def InterfacesRemoved(self, path, interfaces):
        pass


class Knobs(dbus.service.Object):
    def __init__(self, standin):
        super().__init__(standin.bus, "/org/sensorkit/StandIn")
        self.standin = standin

    @dbus.service.method(KNOBS, in_signature="ss", out_signature="")
    def RefuseAcquireNotify(self, uuid, name):
        self.standin.refusals[str(uuid)] = str(name)

    @dbus.service.method(KNOBS, in_signature="s", out_signature="")
    def StopNotifyFromOtherClient(self, uuid):
        for char in self.standin.characteristics():
            if char.uuid == uuid:
                char.stop_notify()

    @dbus.service.method(KNOBS, in_signature="s", out_signature="")
    def RequirePairing(self, address):
        """GATT operations on this device answer NotPermitted "Not paired" until it is paired (also
        for a device not discovered yet)."""
        self.standin.pairing_required.add(str(address))
        if str(address) in self.standin.devices:
            self.standin.devices[str(address)].needs_pairing = True

    @dbus.service.method(KNOBS, in_signature="ss", out_signature="")
    def AddPairedKeyboard(self, address, name):
        """A HID keyboard the user paired long ago and bluetoothd keeps connected: no ATT socket
        behind it, so any Connect, Disconnect or Pair on it is someone fighting over it."""
        keyboard = Device(self.standin, str(address), str(name), ["00001812-0000-1000-8000-00805f9b34fb"])
        keyboard.interfaces[DEVICE].update({
            "Paired": dbus.Boolean(True), "Trusted": dbus.Boolean(True), "Bonded": dbus.Boolean(True),
            "Connected": dbus.Boolean(True), "ServicesResolved": dbus.Boolean(True),
            "Icon": dbus.String("input-keyboard"), "Appearance": dbus.UInt16(0x03C1)})
        del keyboard.interfaces[DEVICE]["RSSI"]
        self.standin.devices[str(address)] = keyboard
        self.standin.manager.InterfacesAdded(keyboard.path, keyboard.interfaces)

    @dbus.service.method(KNOBS, in_signature="", out_signature="")
    def ExportAdapter(self):
        """Adapter1 at /org/bluez/hci0 now, if it was held back (--adapter-asked, --adapter-withheld)."""
        self.standin.export_adapter()

    @dbus.service.method(KNOBS, in_signature="s", out_signature="u")
    def Count(self, what):
        return dbus.UInt32(self.standin.counts.get(str(what), 0))

    @dbus.service.method(KNOBS, in_signature="", out_signature="")
    def Hostile(self):
        """Property values no bluetoothd would send, each on an object of its own."""
        manager = self.standin.manager
        base = ADAPTER_PATH + "/dev_66_66_66_66_66_6"
        manager.InterfacesAdded(base + "0", {DEVICE: {"Address": dbus.Int32(7), "Name": dbus.String("wrong type")}})
        manager.InterfacesAdded(base + "1", {DEVICE: {"Address": dbus.String("not an address")}})
        manager.InterfacesAdded(base + "2", {DEVICE: {
            "Address": dbus.String("66:66:66:66:66:62"), "Adapter": dbus.ObjectPath(ADAPTER_PATH),
            "Name": dbus.String("Hostile\n" + "x" * 5000), "RSSI": dbus.String("-40"),
            "UUIDs": dbus.Array(["not-a-uuid"] * 100000, signature="s"),
            "ManufacturerData": dbus.Dictionary({dbus.UInt16(0x6B): dbus.String("no bytes")}, signature="qv")}})
        manager.InterfacesAdded(base + "2/service0001", {SERVICE: {
            "UUID": dbus.String("0000180d-0000-1000-8000-00805f9b34fbXX"), "Device": dbus.ObjectPath(base + "2")}})
        manager.InterfacesAdded(base + "2/service0002", {SERVICE: {
            "UUID": dbus.String("0000180d-0000-1000-8000-00805f9b34fb"), "Device": dbus.ObjectPath(base + "2")}})
        manager.InterfacesAdded(base + "2/service0002/char0003", {CHAR: {
            "UUID": dbus.String("00002a37-0000-1000-8000-00805f9b34fb"), "Service": dbus.ObjectPath(base + "2/service0002"),
            "Flags": dbus.Array(["notify"], signature="s"), "MTU": dbus.UInt16(65535)}})


class StandIn:
    def __init__(self, address, directory, adapter="now", asked_delay=0.0):
        self.bus = dbus.bus.BusConnection(address)
        self.directory = directory
        self.counts = {}
        self.refusals = {}
        self.pairing_required = set()
        self.agents_by_sender = {}
        self.filter = {}
        self.devices = {}
        self.manager = Manager(self)
        self.agents = AgentManager(self)
        self.adapter = None
        self.withheld = None
        self.asked_delay = asked_delay
        if adapter == "now":
            self.adapter = Adapter(self)
        else:
            self.withheld = Withheld(self, export_when_asked=adapter == "asked")
        self.knobs = Knobs(self)
        self.name = dbus.service.BusName("org.bluez", self.bus)
        GLib.timeout_add(300, self.rescan)

    def export_adapter(self):
        """The kernel reported the controller: Adapter1 appears, announced as bluetoothd does."""
        if self.adapter is None:
            self.withheld.remove_from_connection()
            self.withheld = None
            self.adapter = Adapter(self)
            self.manager.InterfacesAdded(ADAPTER_PATH, self.adapter.interfaces)
        return False

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def everything(self):
        things = [self.agents] + ([self.adapter] if self.adapter is not None else [])
        for device in self.devices.values():
            things.append(device)
            things += device.children
        return things

    def characteristics(self):
        return [c for d in self.devices.values() for c in d.children if isinstance(c, Characteristic)]

    def rescan(self):
        if self.adapter is not None and self.adapter.interfaces[ADAPTER]["Discovering"]:
            self.scan()
        return True

    def scan(self):
        try:
            names = sorted(os.listdir(self.directory))
        except OSError:
            return
        for name in names:
            address = name[:-4].upper()
            if not name.endswith(".adv") or address in self.devices or name[:-4] + ".att" not in names:
                continue
            try:
                with open(os.path.join(self.directory, name), "rb") as handle:
                    data = handle.read(62)
            except OSError:
                continue
            local, uuids, index = address, [], 0
            while index + 1 < len(data) and data[index]:
                length, kind, value = data[index], data[index + 1], data[index + 2:index + 1 + data[index]]
                if kind in (0x08, 0x09):
                    local = value.decode("utf-8", "replace")
                elif kind in (0x02, 0x03):
                    uuids += [uuid_text(value[i:i + 2]) for i in range(0, len(value) - 1, 2)]
                index += 1 + length
            wanted = [str(u) for u in self.filter.get("UUIDs", [])]
            if wanted and not set(wanted) & set(uuids):
                continue
            device = Device(self, address, local, uuids)
            self.devices[address] = device
            self.manager.InterfacesAdded(device.path, device.interfaces)


def main():
    DBusGMainLoop(set_as_default=True)
    adapter, asked_delay = "now", 0.0
    for option in sys.argv[3:]:
        if option.startswith("--adapter-asked="):
            adapter, asked_delay = "asked", float(option[len("--adapter-asked="):])
        elif option == "--adapter-withheld":
            adapter = "withheld"
        else:
            sys.exit("unknown option " + option)
    standin = StandIn(sys.argv[1], sys.argv[2], adapter, asked_delay)
    loop = GLib.MainLoop()
    standin.bus.call_on_disconnection(lambda _: loop.quit())
    loop.run()


if __name__ == "__main__":
    main()
