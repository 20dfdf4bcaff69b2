"""Write rosbag2 bags (mcap or sqlite3, format version 9) with our own message types embedded.

* :func:`typestore` — the Jazzy standard types plus every ``toio_navigator/msg/*`` type, read from the installed
  ``share/toio_navigator/msg`` (or the source tree's ``msg/``), so bags are self-describing.
* :class:`BagWriter` — plain Python (rosbags): one connection per topic, messages written as serialized CDR.
  :meth:`BagWriter.flush` puts everything written so far on disk in a form ``toio-nav repair`` can recover (the
  recorder calls it every :data:`FLUSH_PERIOD_S`), and until :meth:`BagWriter.close` the bag directory holds
  :data:`UNFINALISED` (storage and custom_data), so a bag whose recorder was killed keeps its custom_data too.

The live part (subscribing to the topics of a ROS graph) is ``toio-nav record``
(:mod:`toio_navigator.bags.record_cli`); this module is plain Python (rosbags), no ROS.

Messages are stored as received (CDR bytes); the receive time (ns, the node's clock) is the bag timestamp.
"""
from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.storage_mcap import McapWriter
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

PACKAGE = 'toio_navigator'
STORAGES = ('mcap', 'sqlite3')
#: present in a bag directory from the moment the bag is opened until it is finalised (metadata.yaml written):
#: JSON {"storage": ..., "custom_data": {...}}, what a repair needs that only the finalisation would have stored
UNFINALISED = 'unfinalised.json'
#: how often the recorder flushes: at most this much recording is lost when the recorder is killed
FLUSH_PERIOD_S = 0.5


class BagError(RuntimeError):
    """A bag cannot be written (bad path, unknown type, closed writer)."""


def our_msg_dir() -> Path:
    """Where our .msg definitions are: the installed share directory if the package is installed, else msg/."""
    try:
        # optional: only a ROS install has an ament index (a source checkout or pip install of the core has none)
        from ament_index_python.packages import get_package_share_directory  # noqa: PLC0415 optional, see above
        share = Path(get_package_share_directory(PACKAGE)) / 'msg'
        if any(share.glob('*.msg')):
            return share
    except Exception:  # no ament index (plain pip install of the core): fall back to the source tree
        pass
    src = Path(__file__).resolve().parents[2] / 'msg'
    if any(src.glob('*.msg')):
        return src
    raise BagError(f'cannot find the {PACKAGE} message definitions (no share/{PACKAGE}/msg, no {src})')


def typestore(msg_dir: Path | None = None):
    """A rosbags typestore with the Jazzy types and ours (``toio_navigator/msg/<Name>``)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    types: dict = {}
    for path in sorted(Path(msg_dir or our_msg_dir()).glob('*.msg')):
        types.update(get_types_from_msg(path.read_text(), f'{PACKAGE}/msg/{path.stem}'))
    store.register(types)
    return store


class BagWriter:
    """A rosbag2 directory being written. Use as a context manager or call :meth:`close`."""

    def __init__(self, path: str | Path, storage: str = 'mcap', store=None) -> None:
        if storage not in STORAGES:
            raise BagError(f'unknown storage {storage!r} (expected one of {", ".join(STORAGES)})')
        self.path = Path(path)
        if self.path.exists():
            raise BagError(f'{self.path} already exists; rosbag2 writes a new directory')
        if not self.path.parent.is_dir():
            raise BagError(f'{self.path.parent} is not a directory')
        self.store = store or typestore()
        self.storage = storage
        plugin = StoragePlugin.MCAP if storage == 'mcap' else StoragePlugin.SQLITE3
        self._writer = Writer(self.path, version=9, storage_plugin=plugin)
        self._writer.open()
        self._connections: dict[str, object] = {}
        self._lock = threading.Lock()
        self._custom_data: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.closed = False
        self._write_unfinalised()

    def knows(self, msgtype: str) -> bool:
        return msgtype in self.store.types

    def add_topic(self, topic: str, msgtype: str, msgdef: str | None = None) -> None:
        """Declare a topic (idempotent). ``msgtype`` like 'geometry_msgs/msg/PoseArray'; a type the typestore
        does not know is registered from ``msgdef`` (its .msg text, dependencies after '=' separator lines)."""
        with self._lock:
            if self.closed:
                raise BagError('the bag is closed')
            if topic in self._connections:
                return
            if not self.knows(msgtype) and msgdef:
                self._register(msgtype, msgdef)
            if not self.knows(msgtype):
                raise BagError(f'unknown message type {msgtype!r} for {topic}')
            self._connections[topic] = self._writer.add_connection(topic, msgtype, typestore=self.store)
            self.counts[topic] = 0

    def write(self, topic: str, timestamp_ns: int, data: bytes) -> None:
        """Store one serialized (CDR) message of a declared topic."""
        with self._lock:
            if self.closed:
                return                    # late callbacks after close are dropped, not an error
            self._writer.write(self._connections[topic], int(timestamp_ns), bytes(data))
            self.counts[topic] += 1

    def write_message(self, topic: str, msgtype: str, timestamp_ns: int, message) -> None:
        """Serialize a rosbags message object and store it (for tools that build messages themselves)."""
        self.add_topic(topic, msgtype)
        self.write(topic, timestamp_ns, self.store.serialize_cdr(message, msgtype))

    def _register(self, msgtype: str, msgdef: str) -> None:
        try:
            self.store.register(get_types_from_msg(msgdef, msgtype))
        except Exception as exc:    # rosbags' parser raises its own and generic errors for unparsable text
            raise BagError(f'message type {msgtype}: its stored definition cannot be parsed: {exc}') from None

    def set_custom_data(self, key: str, value: str) -> None:
        """Store ``key: value`` (strings) in the bag's metadata custom_data (e.g. the navigator's parameters)."""
        if not (isinstance(key, str) and isinstance(value, str)):
            raise BagError(f'custom_data {key!r}: key and value must be strings')
        with self._lock:
            if self.closed:
                raise BagError('the bag is closed')
            self._writer.set_custom_data(key, value)
            self._custom_data[key] = value
            self._write_unfinalised()

    def _write_unfinalised(self) -> None:
        tmp = self.path / (UNFINALISED + '.tmp')
        tmp.write_text(json.dumps({'storage': self.storage, 'custom_data': self._custom_data}), encoding='utf-8')
        tmp.replace(self.path / UNFINALISED)

    def flush(self) -> None:
        """Put every message written so far on disk, readable by ``toio-nav repair`` if the process dies: the
        pending mcap chunk is closed and the file synced; sqlite3 commits. (rosbags has no public call for this;
        its writer keeps the storage object in ``storage`` and an mcap chunk in memory until it is 1 MiB.)"""
        with self._lock:
            storage = None if self.closed else self._writer.storage
            if isinstance(storage, McapWriter):
                if storage.chunk.msgs:
                    storage.close_chunk()
                storage.bio.flush()
                os.fsync(storage.bio.fileno())
            elif isinstance(storage, Sqlite3Writer):
                storage.conn.commit()

    def close(self) -> None:
        """Finalise: the mcap summary (or the sqlite3 metadata row) and metadata.yaml are written."""
        with self._lock:
            if not self.closed:
                self.closed = True
                self._writer.close()
                (self.path / UNFINALISED).unlink(missing_ok=True)

    def __enter__(self) -> 'BagWriter':
        return self

    def __exit__(self, *exc) -> None:
        self.close()
