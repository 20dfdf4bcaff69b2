"""Bags whose writer died before finalising them: a process writing a bag is SIGKILLed mid-write, `toio-nav repair`
rebuilds it from what was flushed, and the repaired bag replays with zero divergence up to the kill. A truncated
mcap is named as truncated (with the repair command) by replay and render instead of the reader's own error."""
from __future__ import annotations

import argparse
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from toio_navigator.bags import render_cli, repair_cli, replay_cli
from toio_navigator.bags.record import UNFINALISED
from toio_navigator.bags.recording import PARAMETERS_KEY, ReplayError, bag_custom_data, open_reader, read_recording
from toio_navigator.bags.repair import RepairError, diagnose, repair, scan
from toio_navigator.bags.testing import assert_replays

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / 'test' / 'data' / 'bags'

# Copies a bag message by message through BagWriter, flushing every 200 messages and saying how many it has
# written; then it waits to be killed (it never finalises).
COPY_AND_HANG = r'''
import sys, time
from toio_navigator.bags.record import BagWriter
from toio_navigator.bags.recording import bag_custom_data, open_reader
src, dst, storage = sys.argv[1:4]
reader = open_reader(src)
writer = BagWriter(dst, storage)
for key, value in bag_custom_data(src).items():
    writer.set_custom_data(key, value)
n = 0
for conn, stamp, raw in reader.messages():
    writer.add_topic(conn.topic, conn.msgtype)
    writer.write(conn.topic, stamp, raw)
    n += 1
    if n % 200 == 0:
        writer.flush()
        print(n, flush=True)
print('all', n, flush=True)
time.sleep(600)
'''


def _messages(bag: Path) -> list[tuple[str, int, bytes]]:
    reader = open_reader(bag)
    try:
        return [(c.topic, stamp, bytes(raw)) for c, stamp, raw in reader.messages()]
    finally:
        reader.close()


def _kill_mid_write(src: Path, dst: Path, storage: str) -> int:
    """Start the copy, SIGKILL it once it has flushed half of ``src``; returns how many it had flushed."""
    total = len(_messages(src))
    proc = subprocess.Popen([sys.executable, '-c', COPY_AND_HANG, str(src), str(dst), storage],
                            stdout=subprocess.PIPE, text=True, env={'PYTHONPATH': str(REPO), 'PATH': ''})
    flushed = 0
    try:
        for line in proc.stdout:
            if line.startswith('all'):
                break
            flushed = int(line)
            if flushed >= total // 2:
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
    assert 0 < flushed < total, (flushed, total)
    return flushed


@pytest.mark.parametrize('fixture, storage', [('swap3_mcap', 'mcap'), ('cross2_sqlite3', 'sqlite3')])
def test_a_bag_killed_mid_write_is_repaired_and_replays_up_to_the_kill(tmp_path, capsys, fixture, storage):
    src, dst = FIXTURES / fixture, tmp_path / 'killed'
    flushed = _kill_mid_write(src, dst, storage)
    assert not (dst / 'metadata.yaml').exists() and (dst / UNFINALISED).is_file()

    # before the repair: replay names the damage, what is readable, and the command
    with pytest.raises(ReplayError, match='not finalised') as info:
        read_recording(dst)
    assert f'toio-nav repair {dst}' in str(info.value) and 'complete messages' in str(info.value)

    assert repair_cli.run(argparse.Namespace(bag=dst, out=None, check=False)) == 0
    out = capsys.readouterr().out
    assert 'recovered' in out and 'lost:' in out and '.damaged' in out
    recovered = _messages(dst)
    original = _messages(src)
    # everything flushed before the kill is back, in order, byte for byte: a prefix of the original
    assert flushed <= len(recovered) < len(original)
    assert recovered == original[:len(recovered)]
    assert bag_custom_data(dst)[PARAMETERS_KEY] == bag_custom_data(src)[PARAMETERS_KEY]
    report = assert_replays(dst)              # zero divergence over what was recovered
    assert report.ticks > 10
    with pytest.raises(RepairError, match='nothing to repair'):
        repair(dst)


def test_a_truncated_mcap_is_named_truncated_with_the_repair_command(tmp_path, capsys):
    full = tmp_path / 'full'
    _kill_mid_write(FIXTURES / 'swap3_mcap', full, 'mcap')    # many small chunks (one per flush)
    data = (full / 'full.mcap').read_bytes()
    cut = tmp_path / 'cut.mcap'
    cut.write_bytes(data[:len(data) * 2 // 3])
    assert 'truncated' in diagnose(cut)
    args = argparse.Namespace(bag=cut, params_file=None, overrides=[], tol=[], show=5, live=False, rate=1.0)
    assert replay_cli.run(args) == 2
    err = capsys.readouterr().err
    assert 'truncated' in err and f'toio-nav repair {cut}' in err and 'File end magic' not in err
    assert render_cli.run(argparse.Namespace(bag=cut, out=tmp_path / 'x.png', frames=40, fps=8.0)) == 2
    assert 'truncated' in capsys.readouterr().err
    salvage = scan(cut)
    assert 0 < salvage.messages and 'incomplete' in salvage.lost
    report = repair(cut)                      # a bare file is repaired into <stem>_repaired
    assert report.bag == tmp_path / 'cut_repaired' and len(_messages(report.bag)) == salvage.messages


def test_repair_refuses_what_it_cannot_repair(tmp_path, capsys):
    with pytest.raises(RepairError, match='no such bag'):
        repair(tmp_path / 'missing')
    (tmp_path / 'empty').mkdir()
    with pytest.raises(RepairError, match='no .mcap or .db3'):
        repair(tmp_path / 'empty')
    whole = tmp_path / 'whole'
    shutil.copytree(FIXTURES / 'swap3_mcap', whole)
    assert repair_cli.run(argparse.Namespace(bag=whole, out=None, check=False)) == 2
    assert 'nothing to repair' in capsys.readouterr().err
    assert repair_cli.run(argparse.Namespace(bag=whole, out=None, check=True)) == 0
    garbage = tmp_path / 'garbage.mcap'
    garbage.write_bytes(b'\x00' * 100)
    assert repair_cli.run(argparse.Namespace(bag=garbage, out=None, check=True)) == 1
    assert 'mcap magic' in capsys.readouterr().out
