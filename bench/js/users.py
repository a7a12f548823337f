"""The 10,000-row users.json that shared.js and multivu-state.js read with open():
made beside them when missing (it is a bench input, not committed)."""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ensure_users():
    """Writes bench/js/users.json (10,000 rows) unless it is there already."""
    path = HERE / "users.json"
    if not path.exists():
        rows = [{"id": i, "name": f"user-{i}", "email": f"user-{i}@example.com",
                 "token": f"t{i}".ljust(40, "x")} for i in range(10000)]
        path.write_text(json.dumps(rows))
