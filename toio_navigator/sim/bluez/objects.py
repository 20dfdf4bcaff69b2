"""The D-Bus faces of the virtual BlueZ: org.bluez.Adapter1, Device1, GattService1, GattCharacteristic1 and
GattDescriptor1, served with dbus-fast's ``ServiceInterface``.

Each class is a thin view: properties read the state of the model (:mod:`toio_navigator.sim.bluez.service`),
methods hand over to it. dbus-fast derives the D-Bus signatures from the annotations: each is a Python type
annotated with its D-Bus signature (``typing.Annotated`` with dbus-fast's ``DBusSignature``).
The standard interfaces (ObjectManager.GetManagedObjects, InterfacesAdded/Removed, Properties, Introspectable)
come from dbus-fast's own MessageBus.
"""
import asyncio
from typing import Annotated, Awaitable, TypeVar

from dbus_fast import DBusError, Variant
from dbus_fast.annotations import (
    DBusBool,
    DBusBytes,
    DBusDict,
    DBusInt16,
    DBusObjectPath,
    DBusSignature,
    DBusStr,
    DBusUInt16,
)
from dbus_fast.service import PropertyAccess, ServiceInterface, dbus_method, dbus_property

from toio_navigator.cube.protocol import PROPERTIES, SERVICE_UUID, Property
from toio_navigator.cube.protocol import Characteristic as Char  # GattDescriptor1 has a property named Characteristic

T = TypeVar('T')
StringList = Annotated[list[str], DBusSignature('as')]
PathList = Annotated[list[str], DBusSignature('ao')]
ManufacturerDict = Annotated[dict[int, Variant], DBusSignature('a{qv}')]

ERROR = 'org.bluez.Error.'
#: Client Characteristic Configuration: the descriptor a central writes to enable notifications
CCCD_UUID = '00002902-0000-1000-8000-00805f9b34fb'
SERVICE_HANDLE = 0x000B
#: attribute handle of each characteristic's declaration, as bleak reports them for a real cube (BlueZ names
#: the D-Bus objects after these handles: .../service000b/char000c)
CHAR_HANDLES = {
    Char.ID_INFORMATION: 0x000C, Char.MOTOR_CONTROL: 0x0010,
    Char.LIGHT_CONTROL: 0x0014, Char.SOUND_CONTROL: 0x0017,
    Char.SENSOR_INFORMATION: 0x001A, Char.BUTTON_INFORMATION: 0x001E,
    Char.BATTERY_INFORMATION: 0x0022, Char.CONFIGURATION: 0x0026,
}
_FLAG_NAMES = ((Property.READ, 'read'), (Property.WRITE_WITHOUT_RESPONSE, 'write-without-response'),
               (Property.WRITE, 'write'), (Property.NOTIFY, 'notify'))


def flags(char: Char) -> list[str]:
    """BlueZ's names of a characteristic's GATT properties."""
    return [name for prop, name in _FLAG_NAMES if PROPERTIES[char] & prop]


def bluez_error(name: str, text: str) -> DBusError:
    return DBusError(ERROR + name, text)


async def answered(bluez, work: Awaitable[T]) -> T:
    """The result of a method that waits (for the air, an attempt), or no answer at all when the service that
    was asked stopped or crashed meanwhile (its bus is gone; BlueZ would not answer either)."""
    bus = bluez.bus
    try:
        result = await work
    except DBusError:
        if bluez.bus is not bus or not bluez.running:
            raise asyncio.CancelledError() from None
        raise
    if bluez.bus is not bus or not bluez.running:
        raise asyncio.CancelledError()
    return result


class Adapter(ServiceInterface):
    """org.bluez.Adapter1 of one virtual adapter (:class:`~toio_navigator.sim.bluez.adapter.VirtualAdapter`)."""

    def __init__(self, adapter) -> None:
        super().__init__('org.bluez.Adapter1')
        self._bluez = adapter

    @dbus_property(access=PropertyAccess.READ)
    def Address(self) -> DBusStr:
        return self._bluez.address

    @dbus_property(access=PropertyAccess.READ)
    def AddressType(self) -> DBusStr:
        return 'public'

    @dbus_property(access=PropertyAccess.READ)
    def Name(self) -> DBusStr:
        return f'virtual {self._bluez.name}'

    @dbus_property(access=PropertyAccess.READ)
    def Alias(self) -> DBusStr:
        return f'virtual {self._bluez.name}'

    @dbus_property(access=PropertyAccess.READ)
    def Powered(self) -> DBusBool:
        return True

    @dbus_property(access=PropertyAccess.READ)
    def Discoverable(self) -> DBusBool:
        return False

    @dbus_property(access=PropertyAccess.READ)
    def Pairable(self) -> DBusBool:
        return False

    @dbus_property(access=PropertyAccess.READ)
    def Discovering(self) -> DBusBool:
        return self._bluez.discovering

    @dbus_property(access=PropertyAccess.READ)
    def UUIDs(self) -> StringList:
        return []

    @dbus_property(access=PropertyAccess.READ)
    def Roles(self) -> StringList:
        return ['central', 'peripheral']

    @dbus_method()
    def SetDiscoveryFilter(self, properties: DBusDict):
        self._bluez.set_discovery_filter(properties)

    @dbus_method()
    def StartDiscovery(self):
        self._bluez.start_discovery()

    @dbus_method()
    def StopDiscovery(self):
        self._bluez.stop_discovery()

    @dbus_method()
    def GetDiscoveryFilters(self) -> StringList:
        return ['UUIDs', 'RSSI', 'Pathloss', 'Transport', 'DuplicateData', 'Discoverable', 'Pattern']

    @dbus_method()
    async def RemoveDevice(self, device: DBusObjectPath):
        await answered(self._bluez.bluez, self._bluez.remove_device(device))


class Device(ServiceInterface):
    """org.bluez.Device1 of one virtual cube."""

    def __init__(self, link) -> None:
        super().__init__('org.bluez.Device1')
        self._link = link

    @dbus_property(access=PropertyAccess.READ)
    def Address(self) -> DBusStr:
        return self._link.address

    @dbus_property(access=PropertyAccess.READ)
    def AddressType(self) -> DBusStr:
        return 'random'         # toio cubes use a random device address

    @dbus_property(access=PropertyAccess.READ)
    def Name(self) -> DBusStr:
        return self._link.name

    @dbus_property(access=PropertyAccess.READ)
    def Alias(self) -> DBusStr:
        return self._link.name

    @dbus_property(access=PropertyAccess.READ)
    def Adapter(self) -> DBusObjectPath:
        return self._link.adapter_path

    @dbus_property(access=PropertyAccess.READ)
    def Paired(self) -> DBusBool:
        return False

    @dbus_property(access=PropertyAccess.READ)
    def Bonded(self) -> DBusBool:
        return False

    @dbus_property(access=PropertyAccess.READ)
    def Trusted(self) -> DBusBool:
        return False

    @dbus_property(access=PropertyAccess.READ)
    def Blocked(self) -> DBusBool:
        return False

    @dbus_property(access=PropertyAccess.READ)
    def LegacyPairing(self) -> DBusBool:
        return False

    @dbus_property(access=PropertyAccess.READ)
    def Connected(self) -> DBusBool:
        return self._link.connected

    @dbus_property(access=PropertyAccess.READ)
    def ServicesResolved(self) -> DBusBool:
        return self._link.resolved

    @dbus_property(access=PropertyAccess.READ)
    def RSSI(self) -> DBusInt16:
        return self._link.rssi

    @dbus_property(access=PropertyAccess.READ)
    def UUIDs(self) -> StringList:
        return [SERVICE_UUID]

    @dbus_property(access=PropertyAccess.READ)
    def ManufacturerData(self) -> ManufacturerDict:
        return {}               # toio adverts carry none

    @dbus_property(access=PropertyAccess.READ)
    def ServiceData(self) -> DBusDict:
        return {}

    @dbus_property(access=PropertyAccess.READ)
    def AdvertisingFlags(self) -> DBusBytes:
        return b'\x06'          # LE General Discoverable, BR/EDR not supported

    @dbus_method()
    async def Connect(self):
        await answered(self._link.bluez, self._link.connect())

    @dbus_method()
    async def Disconnect(self):
        await answered(self._link.bluez, self._link.disconnect())


class GattService(ServiceInterface):
    """org.bluez.GattService1: the toio service."""

    def __init__(self, link) -> None:
        super().__init__('org.bluez.GattService1')
        self._link = link

    @dbus_property(access=PropertyAccess.READ)
    def UUID(self) -> DBusStr:
        return SERVICE_UUID

    @dbus_property(access=PropertyAccess.READ)
    def Primary(self) -> DBusBool:
        return True

    @dbus_property(access=PropertyAccess.READ)
    def Device(self) -> DBusObjectPath:
        return self._link.path

    @dbus_property(access=PropertyAccess.READ)
    def Handle(self) -> DBusUInt16:
        return SERVICE_HANDLE

    @dbus_property(access=PropertyAccess.READ)
    def Includes(self) -> PathList:
        return []


class GattCharacteristic(ServiceInterface):
    """org.bluez.GattCharacteristic1: one toio characteristic; BlueZ keeps the last value read or notified."""

    def __init__(self, link, char: Char) -> None:
        super().__init__('org.bluez.GattCharacteristic1')
        self._link, self.char = link, char
        self.value = b''

    @dbus_property(access=PropertyAccess.READ)
    def UUID(self) -> DBusStr:
        return self.char.value

    @dbus_property(access=PropertyAccess.READ)
    def Service(self) -> DBusObjectPath:
        return self._link.service_path

    @dbus_property(access=PropertyAccess.READ)
    def Value(self) -> DBusBytes:
        return self.value

    @dbus_property(access=PropertyAccess.READ)
    def Notifying(self) -> DBusBool:
        return bool(self._link.notify_sessions(self.char))

    @dbus_property(access=PropertyAccess.READ)
    def Flags(self) -> StringList:
        return flags(self.char)

    @dbus_property(access=PropertyAccess.READ)
    def Handle(self) -> DBusUInt16:
        return CHAR_HANDLES[self.char]

    @dbus_property(access=PropertyAccess.READ)
    def MTU(self) -> DBusUInt16:
        return self._link.mtu

    @dbus_method()
    async def ReadValue(self, options: DBusDict) -> DBusBytes:
        self.value = await answered(self._link.bluez, self._link.read(self.char))
        return self.value

    @dbus_method()
    async def WriteValue(self, value: DBusBytes, options: DBusDict):
        kind = options.get('type')
        await answered(self._link.bluez, self._link.write(self.char, bytes(value),
                                                           None if kind is None else str(kind.value)))

    @dbus_method()
    async def StartNotify(self):
        await answered(self._link.bluez, self._link.start_notify(self.char))

    @dbus_method()
    def StopNotify(self):
        self._link.stop_notify(self.char)

    def notified(self, data: bytes) -> None:
        """A notification from the cube: the new Value, announced to whoever listens."""
        self.value = data
        self.emit_properties_changed({'Value': data})


class GattDescriptor(ServiceInterface):
    """org.bluez.GattDescriptor1: the CCCD of a notifying characteristic (BlueZ writes it for StartNotify)."""

    def __init__(self, link, char: Char, char_path: str) -> None:
        super().__init__('org.bluez.GattDescriptor1')
        self._link, self._char, self._char_path = link, char, char_path

    @dbus_property(access=PropertyAccess.READ)
    def UUID(self) -> DBusStr:
        return CCCD_UUID

    @dbus_property(access=PropertyAccess.READ)
    def Characteristic(self) -> DBusObjectPath:
        return self._char_path

    @dbus_property(access=PropertyAccess.READ)
    def Value(self) -> DBusBytes:
        return self._cccd()

    @dbus_property(access=PropertyAccess.READ)
    def Handle(self) -> DBusUInt16:
        return CHAR_HANDLES[self._char] + 2

    @dbus_method()
    def ReadValue(self, options: DBusDict) -> DBusBytes:
        return self._cccd()

    def _cccd(self) -> bytes:
        return b'\x01\x00' if self._link.notify_sessions(self._char) else b'\x00\x00'
