'''GeoClue 2.6's client side: a python-dbusmock template, loaded by path.

What sensorkit's GeoClue client reads, with GeoClue's documented interfaces
(/usr/share/dbus-1/interfaces/org.freedesktop.GeoClue2.{Manager,Client,Location}.xml):
Manager.GetClient (one client per caller, reused), the client's DesktopId, DistanceThreshold,
TimeThreshold, RequestedAccuracyLevel, Active and Location properties, Start (refused with
AccessDenied while DesktopId is unset, as GeoClue does), Stop, and LocationUpdated(old, new) with a
new Location object per fix (Latitude, Longitude, Accuracy, Altitude, Speed, Heading,
Description, Timestamp (tt)). This stand-in has no location agent: GeoClue 2.6 parks GetClient
until one is registered for the caller's uid, which a session agent has and a test does not.
A test replays a track through the org.freedesktop.DBus.Mock method Fix.
'''

import dbus
import dbusmock
from dbusmock import MOCK_IFACE

BUS_NAME = 'org.freedesktop.GeoClue2'
MAIN_OBJ = '/org/freedesktop/GeoClue2/Manager'
MAIN_IFACE = 'org.freedesktop.GeoClue2.Manager'
SYSTEM_BUS = True

CLIENT = 'org.freedesktop.GeoClue2.Client'
LOCATION = 'org.freedesktop.GeoClue2.Location'
CLIENT_PATH = '/org/freedesktop/GeoClue2/Client/1'


def load(mock, parameters):
    mock.AddProperties(MAIN_IFACE, {'InUse': dbus.Boolean(False), 'AvailableAccuracyLevel': dbus.UInt32(8)})
    mock.fixes = 0
    mock.AddMethod(MAIN_IFACE, 'GetClient', '', 'o', 'ret = self.get_client()')
    mock.AddMethod(MAIN_IFACE, 'CreateClient', '', 'o', 'ret = self.get_client()')
    mock.AddMethod(MAIN_IFACE, 'DeleteClient', 'o', '', '')
    mock.AddMethod(MAIN_IFACE, 'AddAgent', 's', '', '')


def get_client(self):
    if CLIENT_PATH not in dbusmock.mockobject.objects:
        self.AddObject(CLIENT_PATH, CLIENT, {
            'Location': dbus.ObjectPath('/'),
            'DistanceThreshold': dbus.UInt32(0),
            'TimeThreshold': dbus.UInt32(0),
            'DesktopId': dbus.String(''),
            'RequestedAccuracyLevel': dbus.UInt32(8),
            'Active': dbus.Boolean(False),
        }, [
            ('Start', '', '',
             'if not self.Get("%s", "DesktopId"):\n'
             '    raise dbus.exceptions.DBusException("\'DesktopId\' property must be set", '
             'name="org.freedesktop.DBus.Error.AccessDenied")\n'
             'self.UpdateProperties("%s", {"Active": dbus.Boolean(True)})' % (CLIENT, CLIENT)),
            ('Stop', '', '', 'self.UpdateProperties("%s", {"Active": dbus.Boolean(False)})' % CLIENT),
        ])
    return dbus.ObjectPath(CLIENT_PATH)


dbusmock.mockobject.DBusMockObject.get_client = get_client


@dbus.service.method(MOCK_IFACE, in_signature='dddtt', out_signature='b')
def Fix(self, latitude, longitude, accuracy, seconds, microseconds):
    '''A new fix for an active client: a Location object and LocationUpdated(old, new).'''
    objects = dbusmock.mockobject.objects
    if CLIENT_PATH not in objects or not objects[CLIENT_PATH].Get(CLIENT, 'Active'):
        return False
    client = objects[CLIENT_PATH]
    self.fixes += 1
    path = f'{CLIENT_PATH}/Location/{self.fixes}'
    self.AddObject(path, LOCATION, {
        'Latitude': dbus.Double(latitude),
        'Longitude': dbus.Double(longitude),
        'Accuracy': dbus.Double(accuracy),
        'Altitude': dbus.Double(-1.7976931348623157e+308),
        'Speed': dbus.Double(-1),
        'Heading': dbus.Double(-1),
        'Description': dbus.String(''),
        'Timestamp': dbus.Struct((dbus.UInt64(seconds), dbus.UInt64(microseconds)), signature='tt'),
    }, [])
    old = client.Get(CLIENT, 'Location')
    client.props[CLIENT]['Location'] = dbus.ObjectPath(path)
    client.EmitSignal('org.freedesktop.DBus.Properties', 'PropertiesChanged', 'sa{sv}as',
                      [CLIENT, dbus.Dictionary({'Location': dbus.ObjectPath(path)}, signature='sv'),
                       dbus.Array([], signature='s')])
    client.EmitSignal(CLIENT, 'LocationUpdated', 'oo', [old, dbus.ObjectPath(path)])
    # GeoClue keeps the previous location object until the next update; older ones go.
    if old != '/' and str(old) in objects:
        self.RemoveObject(str(old))
    return True
