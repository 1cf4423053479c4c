'''ModemManager 1.20 with voice calls and SMS: a python-dbusmock template, loaded by path.

The modemmanager template of later python-dbusmock releases has modems without Call or Sms
objects, and Debian 12's python-dbusmock has none: this one serves what sensorkitd reads, with
the real daemon's names (introspection/org.freedesktop.ModemManager1*.xml of ModemManager 1.20):
modems at /org/freedesktop/ModemManager1/Modem/N listed by the ObjectManager, and calls and SMS
at /Call/N and /SMS/N beside it (ModemManager exports them outside GetManagedObjects), found
through Voice.ListCalls, Messaging.List and the CallAdded, CallDeleted, Added and Deleted
signals. A test drives it through the org.freedesktop.DBus.Mock methods below.
'''

import dbus
import dbusmock
from dbusmock import MOCK_IFACE
from dbusmock.mockobject import OBJECT_MANAGER_IFACE

BUS_NAME = 'org.freedesktop.ModemManager1'
MAIN_OBJ = '/org/freedesktop/ModemManager1'
MAIN_IFACE = 'org.freedesktop.ModemManager1'
SYSTEM_BUS = True
IS_OBJECT_MANAGER = True

MODEM = 'org.freedesktop.ModemManager1.Modem'
VOICE = MODEM + '.Voice'
MESSAGING = MODEM + '.Messaging'
CALL = 'org.freedesktop.ModemManager1.Call'
SMS = 'org.freedesktop.ModemManager1.Sms'


def load(mock, parameters):
    mock.AddProperties(MAIN_IFACE, {'Version': parameters.get('DaemonVersion', '1.20.4')})
    mock.AddMethod(MAIN_IFACE, 'ScanDevices', '', '', '')
    # Modems only: calls and SMS are not managed objects in ModemManager.
    mock.AddMethod(OBJECT_MANAGER_IFACE, 'GetManagedObjects', '', 'a{oa{sa{sv}}}',
                   'ret = {dbus.ObjectPath(k): objects[k].props for k in objects.keys() '
                   'if k.startswith("/org/freedesktop/ModemManager1/Modem/")}')


def _list(modem, interface, name, path, add):
    paths = [p for p in modem.Get(interface, name) if p != path]
    if add:
        paths.append(dbus.ObjectPath(path))
    modem.UpdateProperties(interface, {name: dbus.Array(paths, signature='o')})


@dbus.service.method(MOCK_IFACE, in_signature='u', out_signature='o')
def AddModem(self, index):
    '''A registered modem with Voice and Messaging; InterfacesAdded announces it.'''
    path = f'/org/freedesktop/ModemManager1/Modem/{index}'
    self.AddObject(path, MODEM, {
        'State': dbus.Int32(8),  # REGISTERED
        'Manufacturer': dbus.String('sensorkitd tests'),
        'Model': dbus.String('ModemManager stand-in'),
        'Device': dbus.String('/sys/devices/stand-in'),
        'OwnNumbers': dbus.Array([], signature='s'),
    }, [])
    modem = dbusmock.get_object(path)
    modem.AddProperties(VOICE, {'Calls': dbus.Array([], signature='o'), 'EmergencyOnly': dbus.Boolean(False)})
    modem.AddMethod(VOICE, 'ListCalls', '', 'ao', f'ret = self.Get("{VOICE}", "Calls")')
    modem.AddProperties(MESSAGING, {
        'Messages': dbus.Array([], signature='o'),
        'SupportedStorages': dbus.Array([dbus.UInt32(2)], signature='u'),
        'DefaultStorage': dbus.UInt32(2),
    })
    modem.AddMethod(MESSAGING, 'List', '', 'ao', f'ret = self.Get("{MESSAGING}", "Messages")')
    self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}',
                    [dbus.ObjectPath(path), dbus.Dictionary(modem.props, signature='sa{sv}')])
    return path


@dbus.service.method(MOCK_IFACE, in_signature='o', out_signature='')
def RemoveModem(self, path):
    '''The modem goes away (unplugged); InterfacesRemoved says so.'''
    self.RemoveObject(path)
    self.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas',
                    [dbus.ObjectPath(path), dbus.Array([MODEM, VOICE, MESSAGING], signature='s')])


@dbus.service.method(MOCK_IFACE, in_signature='ouiis', out_signature='o')
def AddCall(self, modem_path, index, direction, state, number):
    '''A call on the modem (MMCallDirection, MMCallState, the remote number); CallAdded.'''
    path = f'/org/freedesktop/ModemManager1/Call/{index}'
    self.AddObject(path, CALL, {
        'State': dbus.Int32(state),
        'StateReason': dbus.Int32(1 if direction == 2 else 2),  # OUTGOING_STARTED, INCOMING_NEW
        'Direction': dbus.Int32(direction),
        'Number': dbus.String(number),
        'Multiparty': dbus.Boolean(False),
        'AudioPort': dbus.String(''),
        'AudioFormat': dbus.Dictionary({}, signature='sv'),
    }, [('Accept', '', '', ''), ('Hangup', '', '', ''), ('Start', '', '', '')])
    modem = dbusmock.get_object(modem_path)
    _list(modem, VOICE, 'Calls', path, True)
    modem.EmitSignal(VOICE, 'CallAdded', 'o', [dbus.ObjectPath(path)])
    return path


@dbus.service.method(MOCK_IFACE, in_signature='oiu', out_signature='')
def SetCallState(self, path, state, reason):
    '''The call changes state: State and StateReason change, StateChanged(old, new, reason).'''
    call = dbusmock.get_object(path)
    old = call.Get(CALL, 'State')
    call.UpdateProperties(CALL, {'State': dbus.Int32(state), 'StateReason': dbus.Int32(reason)})
    call.EmitSignal(CALL, 'StateChanged', 'iiu', [dbus.Int32(old), dbus.Int32(state), dbus.UInt32(reason)])


@dbus.service.method(MOCK_IFACE, in_signature='oo', out_signature='')
def DeleteCall(self, modem_path, path):
    '''Voice.DeleteCall as a client would call it: the object goes, CallDeleted.'''
    self.RemoveObject(path)
    modem = dbusmock.get_object(modem_path)
    _list(modem, VOICE, 'Calls', path, False)
    modem.EmitSignal(VOICE, 'CallDeleted', 'o', [dbus.ObjectPath(path)])


@dbus.service.method(MOCK_IFACE, in_signature='ouuuss', out_signature='o')
def AddSms(self, modem_path, index, pdu_type, state, number, text):
    '''An SMS on the modem (MMSmsPduType, MMSmsState, number, text); Added(path, received).'''
    path = f'/org/freedesktop/ModemManager1/SMS/{index}'
    self.AddObject(path, SMS, {
        'State': dbus.UInt32(state),
        'PduType': dbus.UInt32(pdu_type),
        'Number': dbus.String(number),
        'Text': dbus.String(text),
        'Data': dbus.Array([], signature='y'),
        'SMSC': dbus.String(''),
        'Class': dbus.Int32(-1),
        'TeleserviceId': dbus.UInt32(0),
        'ServiceCategory': dbus.UInt32(0),
        'DeliveryReportRequest': dbus.Boolean(False),
        'MessageReference': dbus.UInt32(0),
        'Timestamp': dbus.String('2026-12-05T06:00:00+00:00' if pdu_type == 1 else ''),
        'DischargeTimestamp': dbus.String(''),
        'DeliveryState': dbus.UInt32(256),
        'Storage': dbus.UInt32(2),
    }, [('Send', '', '', ''), ('Store', 'u', '', '')])
    modem = dbusmock.get_object(modem_path)
    _list(modem, MESSAGING, 'Messages', path, True)
    modem.EmitSignal(MESSAGING, 'Added', 'ob', [dbus.ObjectPath(path), dbus.Boolean(pdu_type == 1)])
    return path


@dbus.service.method(MOCK_IFACE, in_signature='ou', out_signature='')
def SetSmsState(self, path, state):
    '''The SMS changes state (receiving → received, stored → sending → sent): PropertiesChanged.'''
    dbusmock.get_object(path).UpdateProperties(SMS, {'State': dbus.UInt32(state)})


@dbus.service.method(MOCK_IFACE, in_signature='oo', out_signature='')
def DeleteSms(self, modem_path, path):
    '''Messaging.Delete as a client would call it: the object goes, Deleted.'''
    self.RemoveObject(path)
    modem = dbusmock.get_object(modem_path)
    _list(modem, MESSAGING, 'Messages', path, False)
    modem.EmitSignal(MESSAGING, 'Deleted', 'o', [dbus.ObjectPath(path)])
