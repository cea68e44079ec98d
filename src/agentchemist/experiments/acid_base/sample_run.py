"""A titration run synthesised from the equilibrium solver, shaped exactly like the recorder's data.

For tests, documentation and a report preview without the twin: drops of ``drop_ml`` with a relative
spread, the pH the solver gives after each drop plus meter noise, the FSM of SPEC.md section 3
(titrating <-> waiting_ph per drop), statistical and audio channels fused into ``titrant_volume``,
optional anomalies (which flag the records of that drop) and optional snapshot images. The pH is
-log a(H+) by default, as a glass electrode reads it. Everything is seeded; stamps start at ``start``
seconds.

    >>> run = synthetic_titration_run("hcl", 0.1, 25.0, "naoh", 0.1, seed=1)
    >>> run.experiment["status"]
    'completed'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from agentchemist.chemistry.equilibrium import titration_curve
from agentchemist.chemistry.reagents import default_library
from agentchemist.report.model import RunData

__all__ = ["synthetic_titration_run", "titration_plan"]

STATES = ["initial", "pipette_grasped", "solution_drawn", "ready", "titrating", "waiting_ph", "done", "accepted"]
SYMBOLS = ["act", "grasp_ok", "draw_ok", "titrate", "drop", "ph_stable", "record", "endpoint", "verified"]


def titration_plan(experiment_id: str, analyte: str, analyte_m: float, analyte_volume_ml: float, titrant: str,
                   titrant_m: float, target_ph: float, initial_ph: float) -> dict:
    """A five-field plan (as ``Plan.model_dump()`` gives it) for an acid-base titration."""
    lib = default_library()
    a, t = lib.get(analyte), lib.get(titrant)
    transitions = [("initial", "grasp_ok", "pipette_grasped"), ("pipette_grasped", "draw_ok", "solution_drawn"),
                   ("solution_drawn", "titrate", "ready"), ("ready", "titrate", "titrating"),
                   ("titrating", "drop", "waiting_ph"), ("waiting_ph", "ph_stable", "titrating"),
                   ("titrating", "endpoint", "done"), ("done", "verified", "accepted")]
    subtasks = [
        ("monitor", "vision_supervisor", "track the FSM and align events with states", [], "initial", None),
        ("grasp_pipette", "action_policy", "grasp the rubber-bulb pipette in the beaker", [], "initial",
         ("grasp_ok", "pipette_grasped")),
        ("draw_titrant", "action_policy", f"draw {t.display_name} into the pipette", ["grasp_pipette"],
         "pipette_grasped", ("draw_ok", "solution_drawn")),
        ("start_titration", "vision_supervisor", "hand the pipette to the dispenser controller", ["draw_titrant"],
         "solution_drawn", ("titrate", "ready")),
        ("titrate", "dispenser_controller", f"dispense drop by drop until pH {target_ph:g}, waiting for a stable pH",
         ["start_titration"], "ready", ("endpoint", "done")),
        ("audio_drops", "audio_supervisor", "detect droplet events and estimate their volume", ["start_titration"],
         "titrating", None),
        ("verify_endpoint", "vision_supervisor", "verify the endpoint pH is stable for 5 s", ["titrate"], "done",
         ("verified", "accepted")),
        ("report", "summarizer", "write the report with four charts", ["verify_endpoint"], "accepted", None),
    ]
    return {
        "experiment_id": experiment_id,
        "protocol": {"id": "acid_base_titration_ph_endpoint", "version": "1.0.0"},
        "parsed_instruction": {
            "experiment_name": f"titration of {a.display_name} with {t.display_name}",
            "family": "acid_base_titration",
            "entities": {"instruments": ["ph_meter", "magnetic_stirrer", "rubber_bulb_pipette", "beaker"],
                         "reagents": [{"name": a.name, "role": "analyte", "concentration_m": analyte_m,
                                       "volume_ml": analyte_volume_ml},
                                      {"name": t.name, "role": "titrant", "concentration_m": titrant_m}],
                         "objects": ["beaker_1", "pipette_1"]},
            "initial_conditions": {"initial_ph": round(initial_ph, 2), "analyte_volume_ml": analyte_volume_ml},
            "target_conditions": {"target_ph": target_ph},
            "operation_intent": "titrate to the target pH and analyse the curve",
            "data_recording": ["ph after each drop", "total volume", "temperature at start and end"],
            "output_format": ["report with four charts"],
            "operation_primitives": ["grasp", "draw", "dispense_drop"],
        },
        "environment_check": {"satisfied": True, "missing_objects": [], "user_feedback": ""},
        "state_machine": {"states": STATES, "input_symbols": SYMBOLS,
                          "transitions": [{"source": s, "symbol": y, "target": d} for s, y, d in transitions],
                          "initial_state": "initial", "accepting_states": ["accepted"], "state_timeouts_s": {}},
        "task_decomposition": [
            {"id": i, "receiver": r, "description": d, "dependencies": deps, "fsm_state": st,
             "expected_transition": {"symbol": e[0], "target": e[1]} if e else None, "primitive": i, "parameters": {}}
            for i, r, d, deps, st, e in subtasks],
        "module_instantiation": {
            "dispenser": {"mode": "liquid_drops", "stop_on": "ph", "rate_mm_s": 0.5, "settle_each_drop": True,
                          "settle_window_s": 3.0, "endpoint_stable_s": 5.0, "wait_on_change_threshold": 0.02,
                          "target_ph": target_ph, "max_volume_ml": 60.0, "drop_volume_ml": 0.046875},
            "recorder": {"tau": 0.3, "quantities": ["titrant_volume", "ph", "ph_settled", "temperature"],
                         "divergence_tolerance": 0.1},
            "vision": {"endpoint": "ph", "preconditions": ["beaker_on_stirrer", "probe_immersed", "pipette_in_beaker"],
                       "verify_hold_s": 5.0},
            "audio": {"enabled": True, "event_kind": "droplet", "quantity_per_event_ml": 0.046875, "event_timeout_s": 20.0},
        },
        "warnings": [],
    }


def _snapshot(path: Path, hue: float, seed: int) -> None:
    """A small camera-like PNG (a beaker-ish gradient) so the report has something real to embed."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:120, 0:160]
    img = np.stack([0.55 + 0.3 * np.sin(xx / 25.0 + hue), 0.6 + 0.25 * np.cos(yy / 30.0),
                    np.full(xx.shape, 0.7 + 0.2 * np.sin(hue))], -1)
    img = np.clip(img + rng.normal(0, 0.03, img.shape), 0, 1)
    fig = Figure(figsize=(1.6, 1.2), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.imshow(img)
    ax.axis("off")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png")


def synthetic_titration_run(
    analyte: str = "hcl",
    analyte_m: float = 0.1,
    analyte_volume_ml: float = 25.0,
    titrant: str = "naoh",
    titrant_m: float = 0.1,
    *,
    target_ph: float = 12.5,
    max_volume_ml: float = 60.0,
    stop_after_drops: int | None = None,
    seed: int = 0,
    drop_ml: float = 0.046875,
    drop_spread: float = 0.03,
    ph_noise: float = 0.01,
    activity: bool = True,
    start: float = 1000.0,
    settle_s: float = 4.0,
    anomalies: Sequence[Mapping] = (),
    snapshot_dir: Path | None = None,
    experiment_id: str = "exp-synthetic",
) -> RunData:
    """A complete run; ``stop_after_drops`` aborts it there (status "aborted").

    ``activity``: the meter reads -log a(H+) (Davies), as a glass electrode and the twin's meter do.

    ``anomalies``: dicts with ``at_drop`` (1-based) and optional kind, severity, response, resolved,
    description; the drop's fused records get a quality flag and the anomaly is recorded.
    """
    rng = np.random.default_rng(seed)
    n_max = int(max_volume_ml / drop_ml) + 1
    drops = drop_ml * (1.0 + drop_spread * rng.standard_normal(n_max))
    volumes = np.concatenate(([0.0], np.cumsum(drops)))
    ph_true = titration_curve({analyte: analyte_m}, analyte_volume_ml, {titrant: titrant_m}, volumes,
                              activity=activity)
    rising = ph_true[-1] > ph_true[0]
    reached = np.flatnonzero(ph_true >= target_ph) if rising else np.flatnonzero(ph_true <= target_ph)
    n_drops = int(reached[0]) if reached.size else n_max
    aborted = stop_after_drops is not None and stop_after_drops < n_drops
    if aborted:
        n_drops = stop_after_drops
    by_drop = {int(a["at_drop"]): a for a in anomalies}
    plan = titration_plan(experiment_id, analyte, analyte_m, analyte_volume_ml, titrant, titrant_m, target_ph,
                          float(ph_true[0]))
    transitions, fused, raw, anomaly_recs, audio, artifacts = [], [], [], [], [], []
    t = start

    def move(src, sym, dst, agent="vision_supervisor", subtask=""):
        transitions.append({"stamp": t, "from_state": src, "to_state": dst, "symbol": sym, "subtask_id": subtask,
                            "agent": agent})

    def add_fused(quantity, unit, value, conf, channels=(), values=(), confs=(), state="", flags=()):
        fused.append({"seq": len(fused) + 1, "stamp": t, "quantity": quantity, "unit": unit, "value": float(value),
                      "confidence": conf, "channels": list(channels), "channel_values": [float(v) for v in values],
                      "channel_confidences": list(confs), "fsm_state": state, "subtask_id": "titrate",
                      "quality_flags": list(flags)})

    temperature = temperature_start = 24.8 + 0.2 * rng.standard_normal()

    def snap(label: str, hue: float) -> None:
        artifacts.append({"stamp": t, "kind": "snapshot", "path": f"snapshots/{label.replace(':', '_')}.png",
                          "label": label, "_hue": hue})

    snap("start", 0.3)
    add_fused("temperature", "C", temperature, 0.95, ["sensor"], [temperature], [0.95], "initial")
    t += 6.0
    move("initial", "grasp_ok", "pipette_grasped", "action_policy", "grasp_pipette")
    t += 9.0
    move("pipette_grasped", "draw_ok", "solution_drawn", "action_policy", "draw_titrant")
    t += 3.0
    move("solution_drawn", "titrate", "ready", "vision_supervisor", "start_titration")
    t += 1.0
    move("ready", "titrate", "titrating", "dispenser_controller", "titrate")
    ph0 = float(ph_true[0] + rng.normal(0, ph_noise))
    add_fused("ph_settled", "pH", ph0, 0.97, ["sensor"], [ph0], [0.97], "titrating", ["initial"])
    audio_total = 0.0
    for k in range(1, n_drops + 1):
        t += 1.0 + 0.1 * rng.random()
        move("titrating", "drop", "waiting_ph", "audio_supervisor", "audio_drops")
        anomaly = by_drop.get(k)
        flags = ["failure_gated:audio"] if anomaly else []
        audio_estimate = drop_ml * (1 + 0.05 * rng.standard_normal())
        audio_total += audio_estimate
        audio_conf = 0.2 if anomaly else 0.8
        audio.append({"stamp": t, "event_id": f"ev{k:05d}", "kind": "droplet",
                      "classification": "anomalous" if anomaly else "expected", "start": t - 0.02, "end": t + 0.03,
                      "snr_db": 18.0 + rng.normal(0, 2), "peak_frequency_hz": 2400.0 + rng.normal(0, 80),
                      "quantity": audio_estimate, "confidence": audio_conf})
        stat = float(volumes[k])
        # The fused cumulative volume is the statistical channel's (the sim's true volume): the audio
        # channel's running total drifts by its per-drop error, and is shown beside it for comparison.
        add_fused("titrant_volume", "mL", stat, 0.93, ["statistical", "audio"], [stat, audio_total],
                  [0.95, 0.0 if anomaly else 0.8], "waiting_ph", flags)
        if anomaly:
            anomaly_recs.append({"stamp": t, "source": anomaly.get("source", "audio_supervisor"),
                                 "kind": anomaly.get("kind", "abnormal_drop"), "severity": anomaly.get("severity", "warn"),
                                 "description": anomaly.get("description", "droplet sound without the expected shape"),
                                 "fsm_state": "waiting_ph", "subtask_id": "titrate",
                                 "response": anomaly.get("response", "retry"), "resolved": anomaly.get("resolved", True)})
            snap(f"anomaly:{anomaly.get('kind', 'abnormal_drop')}", 2.0)
        for j in range(3):
            t += settle_s / 3
            reading = float(ph_true[k] + rng.normal(0, ph_noise))
            raw.append({"stamp": t, "channel": "sensor", "sensor": "ph_meter", "quantity": "ph", "value": reading,
                        "unit": "pH", "confidence": 0.97, "fsm_state": "waiting_ph", "subtask_id": "titrate", "flags": []})
            add_fused("ph", "pH", reading, 0.97, ["sensor"], [reading], [0.97], "waiting_ph")
        settled = float(ph_true[k] + rng.normal(0, ph_noise))
        add_fused("ph_settled", "pH", settled, 0.97, ["sensor"], [settled], [0.97], "waiting_ph", flags)
        move("waiting_ph", "ph_stable", "titrating", "vision_supervisor", "titrate")
        if k % 100 == 0:
            temperature += 0.02 * rng.standard_normal()
            add_fused("temperature", "C", temperature, 0.95, ["sensor"], [temperature], [0.95], "titrating")
    t += 5.5
    if not aborted:
        move("titrating", "endpoint", "done", "vision_supervisor", "titrate")
        snap("endpoint", 1.1)
        t += 5.0
        move("done", "verified", "accepted", "vision_supervisor", "verify_endpoint")
    temperature_end = temperature + 0.1
    add_fused("temperature", "C", temperature_end, 0.95, ["sensor"], [temperature_end], [0.95], "done")
    if snapshot_dir is not None:
        for i, art in enumerate(artifacts):
            _snapshot(Path(snapshot_dir) / art["path"], art["_hue"], seed + i)
    for art in artifacts:
        art.pop("_hue")
    lib = default_library()
    experiment = {
        "experiment_id": experiment_id,
        "instruction": (f"Titrate {analyte_volume_ml:g} mL of {analyte_m:g} M {lib.get(analyte).display_name} with "
                        f"{titrant_m:g} M {lib.get(titrant).display_name} until the pH reaches {target_ph:g}; record "
                        "pH and total volume after each drop and report the pKa with four charts."),
        "operator": "synthetic",
        "started": start,
        "finished": t,
        "status": "aborted" if aborted else "completed",
        "reason": f"stopped by the operator after {n_drops} drops" if aborted else "target pH reached",
        "plan": plan,
        "reagents": [{"name": analyte, "concentration_m": analyte_m, "volume_ml": analyte_volume_ml, "batch": "A-2025-07",
                      "role": "analyte"},
                     {"name": titrant, "concentration_m": titrant_m, "volume_ml": None, "batch": "B-2025-11",
                      "role": "titrant"}],
        "conditions": {"initial_ph": round(float(ph_true[0]), 2), "target_ph": target_ph,
                       "temperature_start_c": round(float(temperature_start), 2),
                       "temperature_end_c": round(float(temperature_end), 2)},
        "software_version": "0.1.0",
        "config_hash": "sha256:" + "0" * 12 + f"{seed:04d}",
        "parameters": {"drop_volume_ml": drop_ml, "settle_s": settle_s, "seed": seed},
    }
    return RunData(experiment=experiment, transitions=transitions, raw_observations=raw, fused_records=fused,
                   anomalies=anomaly_recs, audio_events=audio, artifacts=artifacts,
                   run_dir=Path(snapshot_dir) if snapshot_dir is not None else None)
