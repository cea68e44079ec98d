"""Report summaries group repeated anomalies (issue 25 item 4): one line per kind and source, with the count,
the worst severity, first and last time, what is unresolved and the responses; resolutions are not counted."""
from agentchemist.report.document import group_phrase
from agentchemist.report.summary import group_anomalies


def rec(t, kind, source="dispenser_controller", severity="warn", response="retry", resolved=False,
        resolution=False, description="d"):
    return {"t_s": t, "kind": kind, "source": source, "severity": severity, "response": response,
            "resolved": resolved, "resolution": resolution, "description": description}


def test_repeats_of_one_kind_and_source_are_one_group_in_order_of_appearance():
    records = [rec(12.1, "no_drop", description="first"), rec(20.0, "node_lost", "vision_supervisor", response="pause"),
               rec(25.0, "no_drop", resolved=True), rec(30.5, "no_drop", severity="halt", response="abort"),
               rec(31.0, "node_lost", "vision_supervisor", severity="info", response="", resolved=True,
                   resolution=True),
               rec(40.0, "no_drop", source="audio_supervisor")]
    groups = group_anomalies(records)
    assert [(g["kind"], g["source"], g["n"]) for g in groups] == [
        ("no_drop", "dispenser_controller", 3), ("node_lost", "vision_supervisor", 1),
        ("no_drop", "audio_supervisor", 1)]
    g = groups[0]
    assert (g["severity"], g["first_t_s"], g["last_t_s"], g["unresolved"]) == ("halt", 12.1, 30.5, 2)
    assert g["responses"] == ["retry", "abort"] and g["description"] == "first"
    phrase = group_phrase(g)
    assert "no_drop (halt) x3" in phrase and "retry, abort" in phrase
    assert "x1" not in group_phrase(groups[1])


def test_no_records_no_groups():
    assert group_anomalies([]) == []
