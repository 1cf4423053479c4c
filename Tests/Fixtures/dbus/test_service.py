#!/usr/bin/python3
"""A D-Bus service for SystemBusTests, on the private bus whose address is argv[1].

Name org.sensorkit.Test, object /org/sensorkit/Test: methods with replies, a slow one, error
replies by name, signals, properties with PropertiesChanged, an ObjectManager whose children
come and go (InterfacesAdded/Removed), an fd in a reply, and hostile replies (huge, deep).
It exits when the bus goes away; the tests also run it under `timeout`.
"""
import os
import sys

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

NAME = "org.sensorkit.Test"
PATH = "/org/sensorkit/Test"
IFACE = "org.sensorkit.Test"
THING = "org.sensorkit.Thing"
PROPS = "org.freedesktop.DBus.Properties"
OM = "org.freedesktop.DBus.ObjectManager"


class Thing(dbus.service.Object):
    def __init__(self, bus, path, name):
        super().__init__(bus, path)
        self.props = {"Name": dbus.String(name), "Level": dbus.Int16(-3)}


class Service(dbus.service.Object):
    def __init__(self, bus):
        super().__init__(bus, PATH)
        self.bus = bus
        self.props = {"Count": dbus.UInt32(0), "Label": dbus.String("start")}
        self.things = {}

    @dbus.service.method(IFACE, in_signature="v", out_signature="v")
    def Echo(self, value):
        return value

    @dbus.service.method(IFACE, in_signature="ayybnqiuxtdsog", out_signature="sayybnqiuxtdsog")
    def Types(self, ay, y, b, n, q, i, u, x, t, d, s, o, g):
        return ("ok", ay, y, b, n, q, i, u, x, t, d, s, o, g)

    @dbus.service.method(IFACE, in_signature="d", out_signature="s", async_callbacks=("reply", "error"))
    def Sleep(self, seconds, reply, error):
        GLib.timeout_add(int(seconds * 1000), lambda: (reply("slept"), False)[1])

    @dbus.service.method(IFACE, in_signature="ss", out_signature="")
    def Fail(self, name, message):
        raise dbus.exceptions.DBusException(message, name=name)

    @dbus.service.method(IFACE, in_signature="su", out_signature="")
    def Emit(self, text, count):
        for index in range(count):
            self.Ping(text, dbus.UInt32(index))

    @dbus.service.signal(IFACE, signature="su")
    def Ping(self, text, index):
        pass

    @dbus.service.method(IFACE, in_signature="s", out_signature="h")
    def OpenPipe(self, content):
        read_end, write_end = os.pipe()
        os.write(write_end, content.encode())
        os.close(write_end)
        fd = dbus.types.UnixFd(read_end)
        os.close(read_end)
        return fd

    @dbus.service.method(IFACE, in_signature="h", out_signature="s")
    def ReadFd(self, fd):
        number = fd.take()
        with os.fdopen(number, "rb") as stream:
            return stream.read(256).decode()

    @dbus.service.method(IFACE, in_signature="u", out_signature="as")
    def Huge(self, count):
        return dbus.Array(["x" * 16] * count, signature="s")

    @dbus.service.method(IFACE, in_signature="u", out_signature="v")
    def Deep(self, levels):
        value = dbus.String("bottom", variant_level=1)
        for _ in range(levels):
            value = dbus.Struct((value,), signature="v", variant_level=1)
        return value

    @dbus.service.method(IFACE, in_signature="s", out_signature="o")
    def AddThing(self, name):
        path = PATH + "/things/" + name
        thing = Thing(self.bus, path, name)
        self.things[path] = thing
        self.InterfacesAdded(dbus.ObjectPath(path), {THING: dbus.Dictionary(thing.props, signature="sv")})
        return dbus.ObjectPath(path)

    @dbus.service.method(IFACE, in_signature="s", out_signature="")
    def RemoveThing(self, name):
        path = PATH + "/things/" + name
        thing = self.things.pop(path)
        thing.remove_from_connection()
        self.InterfacesRemoved(dbus.ObjectPath(path), dbus.Array([THING], signature="s"))

    @dbus.service.method(OM, in_signature="", out_signature="a{oa{sa{sv}}}")
    def GetManagedObjects(self):
        return {dbus.ObjectPath(p): {THING: dbus.Dictionary(t.props, signature="sv")} for p, t in self.things.items()}

    @dbus.service.signal(OM, signature="oa{sa{sv}}")
    def InterfacesAdded(self, path, interfaces):
        pass

    @dbus.service.signal(OM, signature="oas")
    def InterfacesRemoved(self, path, interfaces):
        pass

    @dbus.service.method(PROPS, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        if interface != IFACE or name not in self.props:
            raise dbus.exceptions.DBusException("no such property", name="org.freedesktop.DBus.Error.UnknownProperty")
        return self.props[name]

    @dbus.service.method(PROPS, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return dbus.Dictionary(self.props if interface == IFACE else {}, signature="sv")

    @dbus.service.method(PROPS, in_signature="ssv", out_signature="")
    def Set(self, interface, name, value):
        if interface != IFACE or name not in self.props:
            raise dbus.exceptions.DBusException("no such property", name="org.freedesktop.DBus.Error.UnknownProperty")
        self.props[name] = value
        self.PropertiesChanged(IFACE, dbus.Dictionary({name: value}, signature="sv"), dbus.Array([], signature="s"))

    @dbus.service.signal(PROPS, signature="sa{sv}as")
    def PropertiesChanged(self, interface, changed, invalidated):
        pass


def main():
    DBusGMainLoop(set_as_default=True)
    bus = dbus.bus.BusConnection(sys.argv[1])
    loop = GLib.MainLoop()
    bus.call_on_disconnection(lambda _: loop.quit())
    service = Service(bus)
    name = dbus.service.BusName(NAME, bus, do_not_queue=True)
    print("ready", flush=True)
    loop.run()
    del name, service


if __name__ == "__main__":
    main()
