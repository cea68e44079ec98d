"""Smoke test of bench/coverage.py (3 seeds, phosphoric acid): the bench runs end to end and writes what the
docs/benchmarks.md row reads. The coverage figure itself comes from the bench (20 seeds), not from this test."""

from __future__ import annotations

import json

import pytest

from bench import coverage


@pytest.mark.slow  # about 10-20 s on the shared 2-core machine: twin titrations and equilibrium fits
def test_coverage_bench_writes_per_parameter_coverage(tmp_path):
    out = tmp_path / "coverage.json"
    assert coverage.main(["--seeds", "3", "--cases", "phosphoric_naoh", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["commit"] and result["coverage_factor"] == 2.0 and "load_1min_before" in result
    summary = result["settings"]["perturbed"]["phosphoric_naoh"]["summary"]
    for name in ("pKa1", "pKa2", "V_eq1", "V_eq2", "analyte_m"):
        s = summary[name]
        assert s["n"] + s["not_stated"] == 3
        assert s["n"] == 0 or 0.0 <= s["coverage_pct"] <= 100.0
    assert summary["pKa3"]["n"] == 0  # the third step is not resolvable in water: never stated
    runs = result["settings"]["perturbed"]["phosphoric_naoh"]["runs"]
    assert all(r["rows"] > 200 and r["unsettled"] == 0 for r in runs)
