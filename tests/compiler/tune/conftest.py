"""Make the test templates importable by name, also in spawned measurement workers."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
