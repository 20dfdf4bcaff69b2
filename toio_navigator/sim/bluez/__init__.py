"""A virtual BlueZ: the BlueZ D-Bus API that bleak uses, served on a private bus, whose devices are virtual cubes.

Real bleak (and the unchanged cube_driver) connect to it exactly as to bluetoothd on a Linux machine, so the BLE
path (scan, connect, GATT, notifications, disconnects) runs without a radio. Modules: ``bus`` (a private
dbus-daemon), ``objects`` (the D-Bus interfaces), ``service`` (BlueZ's behaviour), ``host`` (a world in real time
and the service on a background thread), ``cli`` (``toio-nav fake-bluez``).
"""
