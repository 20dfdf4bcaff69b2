"""The unseen scenario families: the packaged file is exactly what the generator's fixed seed gives, and every
scenario is a valid benchmark scenario of at most 64 cubes that the trial's navigator accepts."""
import subprocess
import sys
from pathlib import Path

from toio_navigator.bench.scenarios import load_scenarios
from toio_navigator.bench.trial.runner import navigator_setup, place

ROOT = Path(__file__).resolve().parents[2]
UNSEEN = ROOT / 'toio_navigator' / 'data' / 'scenarios_unseen.yaml'


def test_the_packaged_file_is_what_the_fixed_seed_generates():
    done = subprocess.run([sys.executable, str(ROOT / 'tools' / 'bench' / 'unseen_scenarios.py'), '--check'],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_at_least_ten_families_of_at_most_64_cubes_the_navigator_accepts():
    scenarios = load_scenarios(UNSEEN)
    assert len({s.category for s in scenarios}) >= 10
    assert max(s.n_agents for s in scenarios) <= 64
    packaged = {s.name for s in load_scenarios(ROOT / 'toio_navigator' / 'data' / 'scenarios.yaml')}
    assert not packaged & {s.name for s in scenarios}
    for s in scenarios:
        navigator_setup(s, place(s), 'coordinated')
