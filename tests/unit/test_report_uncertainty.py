"""Section 9's uncertainty budget table (report/uncertainty.py) and the report's 'uncertainty' option."""

from __future__ import annotations

import pytest

from agentchemist.chemistry.analysis_uncertainty import UncertaintyComponent, UncertaintyInputs, combine_budget
from agentchemist.report.model import ReportInputError
from agentchemist.experiments.acid_base.sample_run import synthetic_titration_run
from agentchemist.report.uncertainty import budget_rows, interval_text
from agentchemist.report.writer import write_report


def _budget(value, correction=0.0):
    comps = [UncertaintyComponent("electrode offset", 0.02, "0.02 pH"), UncertaintyComponent("settling lag", 0.01)]
    return combine_budget("pKa1", "", value, comps, UncertaintyInputs(), correction).as_dict()


def test_only_stated_values_get_a_block_with_combined_and_expanded_rows():
    results = {
        "pka": [{"index": 1, "value": 4.77, "method": "curve_fit", "supported": True, "budget": _budget(4.77, 0.01)},
                {"index": 2, "value": 9.0, "method": "curve_fit", "supported": False, "budget": _budget(9.0)}],
        "equivalence_points": [], "concentration": None,
    }
    rows = budget_rows(results)
    assert [r[1] for r in rows] == ["electrode offset", "settling lag", "**combined**", "**expanded (k = 2)**"]
    assert all(r[0].startswith("pKa1 (curve fit) = 4.770") for r in rows)
    assert rows[2][2] == "0.022" and "correction of +0.010" in rows[2][3]
    assert "4.725 to 4.815" in rows[3][3]
    assert interval_text(results["pka"][0]["budget"]) == " (95 % interval 4.725 to 4.815, k = 2)"
    assert interval_text(None) == ""


@pytest.mark.parametrize("bad", [{"bogus": 1.0}, {"titrant_rel_sd": float("nan")}, {"settle_lag_carry": 2.0}])
def test_a_bad_uncertainty_option_is_refused_by_name(tmp_path, bad):
    run = synthetic_titration_run("hcl", 0.1, 25.0, target_ph=12.0, max_volume_ml=30.0)
    with pytest.raises(ReportInputError, match="uncertainty"):
        write_report(run, tmp_path, analysis_options={"uncertainty": bad})
