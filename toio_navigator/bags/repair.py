"""Bags whose recorder died before finalising them (SIGKILL, power loss, a full disk): find out what they still
hold and rebuild a complete bag from it, as ``ros2 bag reindex`` does for rosbag2.

A bag is finalised when its metadata.yaml is written and, for mcap, the file ends with its summary and footer.
Until then ``toio-nav record`` keeps a few things safe for this module: it flushes every
:data:`~toio_navigator.bags.record.FLUSH_PERIOD_S` (closes the pending mcap chunk and syncs the file, or commits
the sqlite3 transaction), and leaves :data:`~toio_navigator.bags.record.UNFINALISED` in the bag directory with the
storage and the custom_data (the navigator's parameters), which only the finalisation would otherwise store.

* :func:`diagnose` — None for a bag that reads as it is, else a sentence on what is wrong, what a scan could read
  and how to repair it (``toio-nav replay`` and ``render`` print it instead of the reader's own error).
* :func:`repair` — reads every complete record (mcap: record by record with the ``mcap`` library's parsers, up to
  the first incomplete or corrupt one; sqlite3: the committed rows) into a new bag written by
  :class:`~toio_navigator.bags.record.BagWriter`, then puts it in place of the damaged one, which is kept.

Plain Python (rosbags, mcap, sqlite3): no ROS.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import struct
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

from mcap.data_stream import ReadDataStream
from mcap.exceptions import McapError
from mcap.opcode import Opcode
from mcap.records import Channel, Chunk, Message, Schema
from mcap.stream_reader import breakup_chunk

from toio_navigator.bags.record import FLUSH_PERIOD_S, UNFINALISED, BagError, BagWriter

MCAP_MAGIC = b'\x89MCAP0\r\n'
DAMAGED_SUFFIX = '.damaged'
SQLITE_SIDE_FILES = ('-journal', '-wal', '-shm')


class RepairError(ValueError):
    """The bag cannot be repaired (or needs no repair); the message says why."""


@dataclass
class Salvage:
    """What a scan of a bag's data file found."""
    data_file: Path
    storage: str
    topics: dict[str, str] = field(default_factory=dict)           # topic -> message type
    counts: dict[str, int] = field(default_factory=dict)           # topic -> complete messages
    start_ns: int | None = None
    end_ns: int | None = None
    size: int = 0                  # bytes in the data file
    readable: int = 0              # bytes read as complete records (mcap)
    complete: bool = False         # the data file itself is whole (mcap footer reached / sqlite3 readable)
    lost: str = ''                 # what could not be read

    @property
    def messages(self) -> int:
        return sum(self.counts.values())

    def describe(self) -> str:
        span = ''
        if self.start_ns is not None:
            span = f', {(self.end_ns - self.start_ns) / 1e9:.1f} s'
        text = f'{self.messages} complete messages on {sum(1 for n in self.counts.values() if n)} topics{span}'
        return text + (f'; lost: {self.lost}' if self.lost else '')


# ------------------------------------------------------------------------------------------------ finding files

def data_files(bag: Path) -> tuple[Path, str]:
    """(data file, storage) of a bag directory or bare .mcap; RepairError when there is none or several."""
    if bag.is_file():
        if bag.suffix == '.mcap':
            return bag, 'mcap'
        if bag.suffix == '.db3':
            return bag, 'sqlite3'
        raise RepairError(f'{bag}: not a bag (a rosbag2 directory, an .mcap or a .db3 file)')
    if not bag.is_dir():
        raise RepairError(f'{bag}: no such bag')
    found = sorted(p for p in bag.iterdir() if p.suffix in ('.mcap', '.db3') and p.is_file())
    if not found:
        raise RepairError(f'{bag}: no .mcap or .db3 file in it: nothing to repair')
    if len(found) > 1:
        raise RepairError(f'{bag}: several data files ({", ".join(p.name for p in found)}); a split bag is not '
                          'supported by toio-nav repair')
    return found[0], 'mcap' if found[0].suffix == '.mcap' else 'sqlite3'


def _unfinalised_custom_data(bag: Path) -> tuple[dict[str, str], str]:
    """custom_data kept by the recorder until finalisation, and a note if it could not be used."""
    side = bag / UNFINALISED if bag.is_dir() else None
    if side is None or not side.is_file():
        return {}, ''
    try:
        info = json.loads(side.read_text(encoding='utf-8'))
        custom = info['custom_data']
        if not (isinstance(custom, dict) and all(isinstance(k, str) and isinstance(v, str)
                                                 for k, v in custom.items())):
            raise TypeError('custom_data is not a mapping of strings')
        return custom, ''
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return {}, f'{side.name} is unreadable ({exc}): the bag\'s custom_data (navigator parameters) is lost'


# ------------------------------------------------------------------------------------------------ reading records

def _mcap_events(data_file: Path, salvage: Salvage):
    """Yield ('topic', name, msgtype, msgdef) and ('message', name, log_time, data) for every complete record of
    an mcap file, in order; stops at the first incomplete or corrupt record, noting it in ``salvage``."""
    schemas: dict[int, Schema] = {}
    channels: dict[int, str] = {}
    salvage.size = size = data_file.stat().st_size
    with data_file.open('rb') as f:
        if f.read(8) != MCAP_MAGIC:
            salvage.lost = 'everything: the file does not start with the mcap magic bytes'
            return
        pos = 8
        while True:
            salvage.readable = pos
            head = f.read(9)
            lost = _record_header_problem(head, size, pos)
            if lost:
                salvage.lost = lost
                return
            opcode, length = struct.unpack('<BQ', head)
            body = f.read(length)
            if opcode in (Opcode.DATA_END, Opcode.FOOTER):
                salvage.readable = size
                salvage.complete = True
                return
            try:
                records = _mcap_records(opcode, body, length)
            except (McapError, struct.error, ValueError, EOFError) as exc:
                salvage.lost = f'the last {size - pos} bytes: record at byte {pos} is corrupt ({exc})'
                return
            yield from _record_events(records, schemas, channels)
            pos += 9 + length


_KNOWN_OPCODES = {int(o) for o in Opcode}


def _record_header_problem(head: bytes, size: int, pos: int) -> str:
    """What is lost when the record header ``head`` read at byte ``pos`` of a ``size``-byte file ends the
    readable part ('' when the record is complete)."""
    if len(head) == 0:
        return (f'only what the recorder had not flushed yet (toio-nav record flushes every '
                f'{FLUSH_PERIOD_S:g} s): every record in the file is complete')
    if len(head) < 9:
        return f'the last {size - pos} bytes (an incomplete record header)'
    opcode, length = struct.unpack('<BQ', head)
    if opcode not in _KNOWN_OPCODES:
        return (f'the last {size - pos} bytes: a corrupt record at byte {pos} (opcode {opcode}; '
                'zeros are what a power loss leaves)')
    if length > size - pos - 9:
        what = Opcode(opcode).name.lower().replace('_', ' ')
        return (f'the last {size - pos} bytes: an incomplete {what} record at byte {pos} (it '
                f'needs {length} bytes, {size - pos - 9} were written)')
    return ''


def _mcap_records(opcode: int, body: bytes, length: int) -> list:
    """The schema, channel and message records in one mcap record (a chunk holds several)."""
    if opcode == Opcode.CHUNK:
        return breakup_chunk(Chunk.read(ReadDataStream(BytesIO(body))))
    if opcode == Opcode.MESSAGE:
        return [Message.read(ReadDataStream(BytesIO(body)), length)]
    if opcode == Opcode.SCHEMA:
        return [Schema.read(ReadDataStream(BytesIO(body)))]
    if opcode == Opcode.CHANNEL:
        return [Channel.read(ReadDataStream(BytesIO(body)))]
    return []


def _record_events(records: list, schemas: dict, channels: dict):
    """The events of ``records``, noting schemas and channels as they come (a channel counts once)."""
    for rec in records:
        if isinstance(rec, Schema):
            schemas[rec.id] = rec
        elif isinstance(rec, Channel) and rec.id not in channels:
            schema = schemas.get(rec.schema_id)
            if schema is None:
                continue
            channels[rec.id] = rec.topic
            yield 'topic', rec.topic, schema.name, schema.data.decode('utf-8', 'replace')
        elif isinstance(rec, Message) and rec.channel_id in channels:
            yield 'message', channels[rec.channel_id], rec.log_time, rec.data


def _sqlite_events(data_file: Path, salvage: Salvage):
    """The same events from a rosbag2 sqlite3 file: its committed rows (an open transaction is rolled back)."""
    salvage.size = data_file.stat().st_size
    try:
        conn = sqlite3.connect(f'file:{data_file}?mode=rw', uri=True)
    except sqlite3.Error as exc:
        salvage.lost = f'everything: cannot open the database ({exc})'
        return
    try:
        defs = {row[0]: row[1] for row in conn.execute(
            'SELECT topic_type, encoded_message_definition FROM message_definitions')}
        names = {}
        for topic_id, name, msgtype in conn.execute('SELECT id, name, type FROM topics ORDER BY id'):
            names[topic_id] = name
            yield 'topic', name, msgtype, defs.get(msgtype)
        for topic_id, stamp, data in conn.execute('SELECT topic_id, timestamp, data FROM messages ORDER BY id'):
            if topic_id in names:
                yield 'message', names[topic_id], stamp, data
        salvage.complete = True
        salvage.readable = salvage.size
        salvage.lost = (f'only what was not yet committed (toio-nav record commits every {FLUSH_PERIOD_S:g} s); '
                        'the count is not knowable')
    except sqlite3.Error as exc:
        salvage.lost = f'the rest of the database: {exc}'
    finally:
        conn.close()


def _events(data_file: Path, storage: str, salvage: Salvage):
    source = _mcap_events if storage == 'mcap' else _sqlite_events
    for event in source(data_file, salvage):
        if event[0] == 'topic':
            salvage.topics.setdefault(event[1], event[2])
            salvage.counts.setdefault(event[1], 0)
        else:
            salvage.counts[event[1]] += 1
            stamp = event[2]
            salvage.start_ns = stamp if salvage.start_ns is None else min(salvage.start_ns, stamp)
            salvage.end_ns = stamp if salvage.end_ns is None else max(salvage.end_ns, stamp)
        yield event


def scan(bag: str | Path) -> Salvage:
    """What the bag's data file holds, record by record (nothing is written)."""
    data_file, storage = data_files(Path(bag))
    salvage = Salvage(data_file, storage)
    for _ in _events(data_file, storage, salvage):
        pass
    return salvage


# ------------------------------------------------------------------------------------------------ diagnosis

def _mcap_is_whole(data_file: Path) -> bool:
    with data_file.open('rb') as f:
        if f.read(8) != MCAP_MAGIC:
            return False
        f.seek(0, 2)
        if f.tell() < 8 + 37:
            return False
        f.seek(-8, 2)
        return f.read(8) == MCAP_MAGIC


def problem(bag: str | Path) -> str | None:
    """Why the bag cannot be read as it is (not finalised, truncated), or None if it looks whole. Cheap: no scan."""
    bag = Path(bag)
    try:
        data_file, storage = data_files(bag)
    except RepairError:
        return None
    unfinalised = bag.is_dir() and not (bag / 'metadata.yaml').is_file()
    truncated = storage == 'mcap' and not _mcap_is_whole(data_file)
    if unfinalised:
        return ('not finalised: it has no metadata.yaml' + (' and its mcap file has no summary' if truncated
                                                            else '') +
                ' (its recorder was killed or the machine lost power before the recording was closed)')
    if truncated:
        return f'truncated: its mcap file {data_file.name} ends without the summary and footer an mcap ends with'
    return None


def diagnose(bag: str | Path) -> str | None:
    """None if the bag looks whole; else what is wrong, what a scan could read, and the repair command."""
    bag = Path(bag)
    what = problem(bag)
    if what is None:
        return None
    try:
        found = scan(bag).describe()
    except (OSError, RepairError) as exc:
        found = f'a scan failed: {exc}'
    return f'{bag}: {what}. Readable: {found}. Repair it with: toio-nav repair {bag}'


# ------------------------------------------------------------------------------------------------ repair

@dataclass
class RepairReport:
    bag: Path
    salvage: Salvage
    kept: Path | None              # the damaged original, kept
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        s = self.salvage
        lines = [f'repaired {self.bag}: recovered {s.describe().split("; lost")[0]}']
        for topic in sorted(s.counts):
            lines.append(f'  {topic} ({s.topics[topic]}): {s.counts[topic]}')
        lines.append(f'lost: {s.lost or "nothing"}')
        if self.kept is not None:
            lines.append(f'the damaged original is kept as {self.kept} (delete it once the repaired bag is fine)')
        lines += [f'note: {n}' for n in self.notes]
        return '\n'.join(lines)


def repair(bag: str | Path, out: str | Path | None = None) -> RepairReport:
    """Rebuild ``bag`` from its complete records. A bag directory is repaired in place (its damaged data file is
    kept beside the new one with the suffix ``.damaged``); a bare file, or any bag with ``out``, is written as a
    new bag directory ``out`` (default: ``<name>_repaired`` beside a bare file)."""
    bag = Path(bag)
    data_file, storage = data_files(bag)
    if out is None and problem(bag) is None:
        raise RepairError(f'{bag} is finalised and whole: nothing to repair')
    in_place = out is None and bag.is_dir()
    target = Path(out) if out is not None else (bag if in_place else bag.with_name(bag.stem + '_repaired'))
    if not in_place and target.exists():
        raise RepairError(f'{target} already exists; choose another --out')
    work = target.parent / f'.{target.name}.repair'
    if work.exists():
        shutil.rmtree(work)          # left by an interrupted repair of this same bag
    work.mkdir(parents=True)
    custom, note = _unfinalised_custom_data(bag)
    salvage = Salvage(data_file, storage)
    report = RepairReport(target, salvage, None, [note] if note else [])
    try:
        writer = BagWriter(work / target.name, storage)
        try:
            for key, value in custom.items():
                writer.set_custom_data(key, value)
            for event in _events(data_file, storage, salvage):
                if event[0] == 'topic':
                    writer.add_topic(event[1], event[2], event[3])
                else:
                    writer.write(event[1], event[2], event[3])
        finally:
            writer.close()
        if not custom:
            report.notes.append('no custom_data was kept: the navigator\'s parameters are not in the bag '
                                '(replay with --params-file)')
        if in_place:
            report.kept = data_file.with_name(data_file.name + DAMAGED_SUFFIX)
            data_file.replace(report.kept)
            for suffix in SQLITE_SIDE_FILES:      # they belong to the old database: beside the new one they would
                side = data_file.with_name(data_file.name + suffix)      # be "rolled back" into it
                if side.exists():
                    side.replace(report.kept.with_name(report.kept.name + suffix))
            for item in (work / target.name).iterdir():
                item.replace(target / item.name)
            (target / UNFINALISED).unlink(missing_ok=True)
        else:
            (work / target.name).replace(target)
    except (BagError, OSError) as exc:
        raise RepairError(f'cannot write the repaired bag: {exc}') from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return report
