"""`make bench`: run every benchmark, write bench/results/*.json, and rewrite the results table in
docs/benchmarks.md (between the bench markers) with the machine it ran on. Each benchmark is a separate process so
one failure does not hide the others; a failed one is reported in the table as failed."""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def run(name: str, argv: list[str], timeout: float = 1800) -> bool:
    print(f"[bench] {name}: {' '.join(argv)}", flush=True)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, *argv], cwd=REPO, timeout=timeout)
    print(f"[bench] {name}: exit {proc.returncode} after {time.perf_counter() - started:.0f} s", flush=True)
    return proc.returncode == 0


def record_rates() -> dict:
    from agentchemist.record import open_store
    from agentchemist.record.benchmark import measure_write_rate
    out = {}
    for flush_every in (0, 1):
        path = Path(tempfile.mkdtemp(prefix="bench-store-")) / "records.db"
        with open_store(str(path)) as store:
            rate = measure_write_rate(store, rows=5000 if flush_every == 0 else 1000, flush_every=flush_every,
                                      experiment_id=f"bench-{flush_every}")
        out[f"sqlite_flush_every_{flush_every or 'end'}"] = rate.rows / rate.seconds
    (RESULTS / "recorder.json").write_text(json.dumps({"rows_per_s": out, "machine": machine()}, indent=2))
    return out


def planner_accuracy() -> dict:
    sys.path.insert(0, str(REPO / "bench"))
    from planner import run as planner_run  # bench/planner.py: tuned and held-out corpus accuracy

    return planner_run()


def machine() -> str:
    return f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, {platform.system()}"


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def mujoco_library_row(lib: dict) -> tuple[str, str]:
    """Scenarios run with arm_backend mujoco against the kinematic library's figures (bench/mujoco_library.py)."""
    rows = lib["scenarios"]
    ok = sum(1 for r in rows.values() for run in r["runs"] if run["outcome_ok"])
    runs = sum(len(r["runs"]) for r in rows.values())
    kin = [r["kinematic"]["expected_behaviour"] for r in rows.values() if r.get("kinematic")]
    det = sum((r["mujoco"] or {}).get("faults_detected") or 0 for r in rows.values())
    inj = sum((r["mujoco"] or {}).get("faults_injected") or 0 for r in rows.values())
    # readme_note: what a reader needs beside the counts (which rows were re-run after which change)
    note = f"{lib['readme_note']} " if lib.get("readme_note") else ""
    false = sum((r["mujoco"] or {}).get("clean_runs_with_false_alarm") or 0 for r in rows.values())
    alarms = "no false alarm" if not false else f"{false} clean runs with a false alarm"
    return ("library with mujoco (goal: the kinematic figures)",
            f"now {ok} of {runs} runs as expected over {len(rows)} scenarios, {alarms}, "
            f"faults detected {det}/{inj} {note}"
            f"(kinematic: {100 * min(kin):.0f} % as expected on each)" if kin else f"now {ok} of {runs} as expected")


def table() -> str:
    rows = []
    twin = load("twin")
    if twin:
        rows.append(("twin alone (physics, pH, drops)", f"{twin['twin_alone']['real_time_factor']:.0f}x real time"))
        rows.append(("twin with audio + camera rendering", f"{twin['twin_with_streams']['real_time_factor']:.0f}x real time"))
        demo = twin.get("graph_demo") or {}
        if demo.get("real_time_factor"):
            rows.append(("whole graph, HCl/NaOH demo (incl. start-up)",
                         f"{demo['real_time_factor']:.1f}x, {demo['wall_s']:.0f} s wall for {demo['sim_s']:.0f} s sim"))
        s = twin["solver"]
        physics = load("physics")
        if physics:
            r, tk, tm = physics["render"], physics["titration"]["kinematic"], physics["titration"]["mujoco"]
            rows.append(("MuJoCo: 3 RGB-D cameras 320x240 + physics, one core (goal >= 15 fps each)",
                         f"{r['fps_each_camera']:.1f} fps each ({r['render_ms_per_frame_set']:.0f} ms render, "
                         f"{r['physics_ms_per_frame_set']:.1f} ms physics per frame set; {r['gl']})"))
            rows.append(("titration session in the twin, arm_backend kinematic vs mujoco (same run)",
                         f"{tk['real_time_factor']:.0f}x vs {tm['real_time_factor']:.1f}x real time "
                         f"(3 cameras at 2 Hz, {tm['sim_s']:.0f} s sim)"))
            for run in (physics.get("scenario_once") or {}).get("runs", []):
                rows.append((f"whole graph once, {run['scenario']}", f"{run['outcome']}, {run['wall_s']:.0f} s wall, "
                             f"{run['real_time_factor']:.1f}x"))
        lib = load("mujoco_library")
        if lib:
            rows.append(mujoco_library_row(lib))
        rows.append(("pH solver per titration point", f"{1e6 * s['scalar_activity_s_per_point']:.0f} us scalar (Davies), "
                     f"{1e6 * s['vectorised_s_per_point']:.1f} us vectorised"))
    rtf = load("rtf")
    if rtf:
        rows.append(rtf_row(rtf))
    ab = sorted(RESULTS.glob("rtf_ab_*.json"))  # dated; the latest comparison
    if ab:
        rows.append(rtf_ab_row(ab[-1].stem.removeprefix("rtf_ab_"), json.loads(ab[-1].read_text())))
    for name in ("contention", "contention_concurrent"):  # the second: a later run of one condition (--out)
        contention = load(name)
        if contention:
            rows.append(contention_row(contention))
    demo = load("demo")
    if demo:
        rows.append(("make demo (HCl/NaOH worked example, whole graph)",
                     f"{demo['outcome']}, {demo['wall_s']:.0f} s wall, {demo['real_time_factor']:.1f}x real time, "
                     f"{demo['drops']} drops, equivalence {demo['equivalence_ml']:.3f} mL vs {demo['theory_ml']:.3f} "
                     f"({demo['equivalence_error_drops']:+.1f} drops)"))
    audio = load("audio_detector")
    if audio:
        at10 = next((r for r in audio["snr_sweep"] if r["snr_db"] == 10.0), None)
        if at10:
            rows.append(("drop detection at 10 dB SNR", f"F1 {at10['f1']:.3f}, onset error max {at10['onset_error_ms_max']:.1f} ms"))
        rows.append(("drop detection latency / cost", f"median {audio['latency_ms']['median']:.0f} ms, "
                     f"{audio['realtime_factor_one_core']['detector']:.0f}x real time on one core"))
    two = load("audio_two_drops")
    if two:
        on, off = two["reonset"], two["no_reonset"]
        false = sum(s["false_positives"] for s in on["singles"])
        rows.append(("two drops 20-100 ms apart heard as two droplets (goal: the extra drop heard)",
                     f"{on['pairs']['heard_as_two']} of {on['pairs']['pairs']} (without the reonset split "
                     f"{off['pairs']['heard_as_two']}); single drops at SNR 12/20/30 dB: {false} false droplets"))
    rec = load("recorder")
    if rec:
        r = rec["rows_per_s"]
        rows.append(("recorder SQLite writes", f"{r.get('sqlite_flush_every_end', 0):,.0f} rows/s batched, "
                     f"{r.get('sqlite_flush_every_1', 0):,.0f} rows/s durable per row"))
    fusion = load("fusion")
    if fusion:
        rows.append(("titrant volume error vs twin truth, mean abs (HCl/NaOH demo)",
                     f"fused {fusion['fused']['mean_abs_drops']:.2f} drops, statistical "
                     f"{fusion['statistical']['mean_abs_drops']:.2f}, audio {fusion['audio']['mean_abs_drops']:.2f}"
                     + ("" if fusion["fusion_beats_best_channel"] else " (fusion does not beat the best channel: see fusion.json 'why')")))
    plan = load("planner")
    if plan:
        if "tuned_accuracy" in plan:
            rows.append(("planner corpus, chemists' wording (goal: held-out >= 95 %)",
                         f"{plan['cases']} instructions: tuned {100 * plan['tuned_accuracy']:.1f} % of "
                         f"{plan['tuned_cases']}, held-out {100 * plan['holdout_accuracy']:.1f} % of "
                         f"{plan['holdout_cases']}, median {1000 * plan['latency']['median_s']:.1f} ms"))
        else:
            rows.append(("planner corpus", f"{plan['cases']} instructions, accuracy {100 * plan['accuracy']:.0f} % "
                         f"(held-out {100 * plan['holdout_accuracy']:.0f} %), median {1000 * plan['latency']['median_s']:.1f} ms"))
    disp = load("dispenser")
    if disp:
        for key, value in (disp.get("summary") or {}).items():
            rows.append((f"dispenser: {key}", str(value)))
    adaptive = load("adaptive_dispensing")
    if adaptive:
        rows.append(adaptive_row(adaptive))
    faults = load("fault_campaign")
    if faults:
        rows.append(fault_campaign_row(faults))
    bag = load("bag_timing")
    if bag:
        for fmt in ("sqlite3", "mcap"):
            r = bag[fmt]["receive"]
            rows.append((f"bag playback timing, {fmt} reference bag (at the subscriber)",
                         f"median {r['median_ms']:.1f} ms, p95 {r['p95_ms']:.1f} ms, "
                         f"{100 * r['within_5ms']:.0f} % within 5 ms"))
    piper = load("piper")
    if piper:
        for cond, label in (("quiet", "normal scheduling"), ("cpu_hog", "normal scheduling, CPU hog per core"),
                            ("quiet_fifo", "SCHED_FIFO loop"), ("cpu_hog_fifo", "SCHED_FIFO loop, CPU hog per core")):
            r = piper.get(cond)
            if not r or any("failed" in a for a in r["arms"].values()):
                continue
            worst = lambda key, q: max(a[key].get(q, float("nan")) for a in r["arms"].values())  # noqa: E731
            rows.append((f"Piper loop, 2 arms x 200 Hz, {label} (goal: period jitter p99 <= 1 ms on a quiet core)",
                         f"jitter p50/p99/max {worst('period_jitter', 'p50_ms'):.2f}/{worst('period_jitter', 'p99_ms'):.2f}/"
                         f"{worst('period_jitter', 'max_ms'):.1f} ms; command->frame p50/p99 "
                         f"{worst('command_to_frame', 'p50_ms'):.1f}/{worst('command_to_frame', 'p99_ms'):.0f} ms; "
                         f"feedback->JointState (DDS) p50/p99 {worst('feedback_to_joint_state', 'p50_ms'):.1f}/"
                         f"{worst('feedback_to_joint_state', 'p99_ms'):.0f} ms; bus load "
                         f"{100 * max(a['bus_load'] for a in r['arms'].values()):.0f} % of 1 Mbit/s (nominal "
                         f"{100 * piper.get('bus_load_nominal', float('nan')):.0f} %); "
                         f"load average {r['load_1min_before']:.1f} on {piper['machine']['cpus']} cores "
                         f"({piper['machine']['commit']})"))
    vision = load("vision_pipeline")
    if vision:
        pf = vision["per_frame_ms"]
        rows.append(("vision pipeline per 640x480 frame (goal: < 33 ms at 30 fps)",
                     f"{pf['mean']:.1f} ms mean, {pf['p95']:.1f} ms p95 on one core: "
                     f"{100 * vision['share_of_one_core_at_30fps']:.0f} % of one core at 30 fps"))
    rows += latency_rows(load("latency"))
    rows += vla_rows(load("vla"))
    rows += vla_titration_rows(load("vla_titration"))
    rows += coverage_rows(load("coverage"))
    lines = [START, f"Measured on {machine()} ({time.strftime('%Y-%m-%d')}); JSON in bench/results/.", "",
             "| benchmark | result |", "|---|---|"]
    lines += [f"| {a} | {b} |" for a, b in rows]
    lines += scenario_tables()
    lines.append(END)
    return "\n".join(lines)


def latency_rows(lat: dict | None) -> list[tuple[str, str]]:
    """bench/latency.py: wall-time latencies through DDS between node processes, quiet and beside a CPU hog."""
    if not lat:
        return []

    def both(by_condition: dict, key: str = "latency") -> str:
        parts = []
        for cond, label in (("quiet", "quiet"), ("cpu_hog", "CPU hog per core")):
            r = by_condition.get(cond)
            if r and r.get(key, {}).get("n"):
                p = r[key]
                parts.append(f"{label} p50/p99/max {p['p50_ms']:.1f}/{p['p99_ms']:.1f}/{p['max_ms']:.0f} ms "
                             f"(n {p['n']}, load {r['load_1min_before']:.1f})")
        return "; ".join(parts) or "no samples"

    rows = []
    machine = lat.get("ph_to_hold", {}).get("machine", lat["machine"])  # measured at its own commit (--merge)
    where = f"{machine['commit']}, {machine['cpus']} cores"
    if "ph_to_hold" in lat:
        rows.append((f"pH reading across the target -> gripper hold, DDS, wall (goal p99 <= "
                     f"{lat['ph_to_hold']['goal_p99_ms']:g} ms)", both(lat["ph_to_hold"]) +
                     f"; the dispenser's change check, run on the reading's arrival ({where})"))
        rows.append((f"endpoint judge's hold message -> gripper hold, DDS, wall (goal p99 <= "
                     f"{lat['hold_message_to_hold']['goal_p99_ms']:g} ms)", both(lat["hold_message_to_hold"])))
    ab = lat.get("dispenser_on_arrival_ab")
    if ab:
        def side(s):
            return "; ".join(f"{what} p50/p99 {s[k]['p50_ms']:.1f}/{s[k]['p99_ms']:.0f} ms, "
                             f"{100 * s[k]['within_10ms']:.0f} % within 10 ms"
                             for k, what in (("ph_to_hold", "pH"), ("hold_message_to_hold", "hold msg")))
        rows.append(("dispenser hold at the next 50 ms tick vs on arrival, same load (A/B, quiet, n 40 each)",
                     f"tick: {side(ab['before'])} | on arrival: {side(ab['after'])} (load "
                     f"{min(ab['after']['load_1min_before'] + ab['before']['load_1min_before']):.0f}-"
                     f"{max(ab['after']['load_1min_before'] + ab['before']['load_1min_before']):.0f})"))
    ex = lat.get("own_process_executor_ab")
    if ex:
        def run(r):
            ph, a = r["ph_to_hold"], r["drop_to_audio_event"]["0.01"]
            return (f"pH->hold p50/p99 {ph['latency']['p50_ms']:.1f}/{ph['latency']['p99_ms']:.0f} ms, "
                    f"{len(ph['errors'])} of {ph['latency']['n'] + len(ph['errors'])} samples failed; 10 ms audio "
                    f"chunks p99 {a['latency']['p99_ms']:.0f} ms, {a['missed']} drops missed, node CPU "
                    f"{a['node_cpu_percent']:.0f} % ({r['commit']}, load {ph['load_1min_before']:.1f})")
        rows.append(("a node in its own process: MultiThreadedExecutor vs SingleThreadedExecutor (shipped), "
                     "DDS, wall", f"multi: {run(ex['multi_threaded'])} | single: {run(ex['single_threaded'])}"))
    audio = lat.get("drop_to_audio_event")
    if audio:
        for chunk, r in audio["by_chunk_s"].items():
            cpu = "/".join(f"{r[c]['node_cpu_percent']:.0f}" for c in ("quiet", "cpu_hog") if "node_cpu_percent" in r.get(c, {}))
            rows.append((f"drop onset -> AudioEvent, {1e3 * float(chunk):g} ms chunks, DDS, wall (goal p99 <= "
                         f"{audio['goal_p99_ms']:g} ms)", both(r) + f"; audio_supervisor CPU {cpu} % of a core"))
        rows.append(("audio chunk size chosen by the latency measurement",
                     f"{1e3 * audio['choice']['chunk_s']:g} ms: {audio['choice']['why']}"))
    if "frame_to_colour" in lat:
        rows.append(("camera frame -> colour reading (vision_supervisor), DDS, wall", both(lat["frame_to_colour"])))
    if "record_to_durable" in lat:
        rows.append(("record published -> committed SQLite row (recorder), DDS, wall",
                     both(lat["record_to_durable"], "to_row")))
        rows.append(("record published -> recorder's acknowledgement (RecorderStatus), DDS, wall",
                     both(lat["record_to_durable"], "to_acknowledgement")))
    return rows


def held_out_note(verdict: dict) -> str:
    """The compared pair on the seeds never tuned on, when the result has them."""
    h = verdict.get("held_out")
    if not h:
        return ""
    seeds = f"{min(h['seeds'])}-{max(h['seeds'])}"
    return (f"; held-out seeds {seeds}: {h['speedup']:.2f}x ({h['adaptive_sim_s_mean']:.0f} vs "
            f"{h['best_constant_sim_s_mean']:.0f} s), worst drops past the crossing drop "
            f"{h['adaptive_worst_excess_drops']:.2f} vs {h['constant_worst_excess_drops']:.2f}")


def adaptive_row(result: dict) -> tuple[str, str]:
    """Adaptive vs the best constant rate at equal accuracy (bench/adaptive_dispensing.py)."""
    v = result["verdict"]
    label = (f"dispenser: adaptive vs best constant rate, {len(result['seeds'])} seeds x 3 chemistries to the "
             "equivalence pH (goal: >= 3x faster at equal accuracy)")
    if "speedup" not in v:
        return label, f"no comparison: adaptive {v['adaptive']}, best constant {v['best_constant']}"
    by = ", ".join(f"{k} {x:.1f}x" for k, x in v["speedup_by_chemistry"].items())
    return label, (f"{v['speedup']:.2f}x: {v['adaptive']} {v['adaptive_sim_s_mean']:.0f} s vs {v['best_constant']} "
                   f"{v['best_constant_sim_s_mean']:.0f} s sim ({by}); worst drops past the crossing drop "
                   f"{v['adaptive_worst_excess_drops']:.2f} vs {v['constant_worst_excess_drops']:.2f}; equal accuracy "
                   f"{'met' if v['equal_accuracy_met'] else 'NOT met'}{held_out_note(v)} ({result['commit']}, load "
                   f"{result['load_avg_1min']['start']:.1f}-{result['load_avg_1min']['end']:.1f})")


def rtf_row(rtf: dict) -> tuple[str, str]:
    """bench/rtf.py: the real-time factor of the whole titration, per configuration, with the load."""
    parts = []
    for r in rtf["runs"]:
        if "real_time_factor" not in r:
            parts.append(f"{r['config']}: {r.get('error', 'failed')}")
            continue
        load = f"load {r['load_before'][0]:.0f}->{r['load_after'][0]:.0f}"
        parts.append(f"{r['processes']} process{'es' if r['processes'] > 1 else ''} {r['real_time_factor']:.1f}x "
                     f"({r['task_s']:.0f} s twin / {r['task_wall_s']:.0f} s wall, {r['cpu_s']:.0f} CPU s, {load}, "
                     f"{r['outcome']}, {r['drops_landed']} drops, eq err {r['equivalence_error_drops'][0]:+.2f} drops)")
    return (f"full HCl/NaOH titration real-time factor (goal >= {rtf['goal_real_time_factor']:.0f}x on 2 cores; "
            f"{rtf['commit']})", "; ".join(parts))


def rtf_ab_row(date: str, ab: dict) -> tuple[str, str]:
    """bench/results/rtf_ab_*.json: the goal's commit and a later one alternated in one sitting, so that a
    slower machine shows as the same drop on both."""
    by: dict[str, list[str]] = {}
    for r in ab["runs"]:
        by.setdefault(r["commit"], []).append(f"{r['real_time_factor']:.1f}x ({r['cpu_s']:.0f} CPU s)")
    return (f"real-time factor, the same titration from two commits alternated in one sitting ({date})",
            "; ".join(f"{c}: {', '.join(v)}" for c, v in by.items()) + f": {ab['conclusion']}")


def contention_row(result: dict) -> tuple[str, str]:
    """bench/contention.py: the library's decisions twice at once and beside a CPU hog vs alone."""
    parts = []
    for name, v in result["verdict"].items():
        load = result["conditions"][name.split(" copy")[0]]
        differ = ", ".join(f"{d['scenario']} seed {d['seed']}: {d['alone']['outcome']} "
                           f"{d['alone']['alarm_kinds'] or 'no anomaly'} alone vs {d['here']['outcome']} "
                           f"{d['here']['alarm_kinds'] or 'no anomaly'}" for d in v["different"])
        gap = v["largest_equivalence_gap_drops"]
        parts.append(f"{name}: {v['same_decisions']}/{v['runs']} same (load {load['load_1min_before']:.0f}"
                     f"->{load['load_1min_after']:.0f}{'; equivalence within %.2f drop' % gap if gap is not None else ''}"
                     f"{'; ' + differ if differ else ''})")
    alone = result["conditions"]["alone"]
    where = (f"alone load {alone['load_1min_before']:.0f}" if "load_1min_before" in alone
             else f"alone = the library run at {alone.get('commit') or '?'}, {alone['from']}")
    return (f"scenario library, {result['seeds']} seed each: decisions (outcome, anomaly kinds) vs the same run alone "
            f"(goal: all the same; {result['commit']}, {where})", "; ".join(parts))


def fault_campaign_row(faults: dict) -> tuple[str, str]:
    """Goal: every case held, named, nothing acknowledged lost, honest (table: bench/results/fault_campaign.md)."""
    summary = faults["summary"]
    n = sum(r["cases"] for r in summary)
    total = {k: sum(r[k] for r in summary) for k in ("held", "named", "records_lost", "honest")}
    low, high = min(r["cases"] for r in summary), max(r["cases"] for r in summary)
    seeds = str(low) if low == high else f"{low}-{high}"
    return (f"fault campaign: {len(summary)} faults x {seeds} seeds ({n} cases), kill/stall each agent (goal: all held, named, "
            f"0 records lost, honest)", f"held {total['held']}/{n}, named {total['named']}/{n}, records lost "
            f"{total['records_lost']}, honest {total['honest']}/{n} ({faults['commit']}; "
            "bench/results/fault_campaign.md)")


def coverage_rows(cov: dict | None) -> list[tuple[str, str]]:
    """Coverage of the stated 95 % intervals on twin titrations (bench/coverage.py): goal >= 90 % each."""
    if not cov:
        return []
    rows = []
    for scenario, block in (cov.get("settings", {}).get("perturbed") or {}).items():
        parts = []
        for name, s in block["summary"].items():
            if s["n"]:
                was = s.get("before_budget")
                was = f"; fit-only u before: {was['coverage_pct']:.0f} %" if was else ""
                parts.append(f"{name} {s['coverage_pct']:.0f} % (n {s['n']}, median |err|/u "
                             f"{s['median_abs_error_over_u']:.2f}{was})")
            else:
                parts.append(f"{name} never stated ({s['not_stated']} runs)")
        rows.append((f"95 % intervals containing the twin's truth, {scenario}, {cov['seeds']} seeds "
                     "(goal: >= 90 % each)", "; ".join(parts)))
    return rows


def vla_rows(vla: dict | None) -> list[tuple[str, str]]:
    """VLA action policy (bench/vla.py): chunk latency on one CPU core, success in the twin."""
    if not vla:
        return []
    rows = []
    for name in ("tiny", "paper"):
        r = vla.get(name)
        if r:
            med, best = r["median_s_per_chunk"], r["min_s"]
            unit, k = ("ms", 1000) if med < 1 else ("s", 1)
            load = r.get("load_average") or vla.get("latency_load") or [float("nan")]
            rows.append((f"VLA {name} ({r['parameters']['total'] / 1e6:.2f} M params) per action chunk, 1 CPU thread, "
                         f"{r['ode_steps']} Euler steps" + (" (goal >= 50 chunks/s)" if name == "tiny" else ""),
                         f"median {k * med:.1f} {unit} ({r['chunks_per_s']:.2f} chunks/s), best {k * best:.1f} {unit}; "
                         f"load average {load[0]:.1f} on 2 shared cores; no GPU"))
    for key in sorted(k for k in vla if k.startswith("success")):
        s = vla[key]
        t = s.get("training", {})
        rows.append(("VLA coarse subtasks in the twin, tiny vs scripted",
                     ", ".join(f"{k}: {100 * s['vla'][k]:.0f} % vs {100 * s['scripted'][k]:.0f} %" for k in s["vla"])
                     + f" ({s['episodes_per_subtask']} randomised episodes each; trained on {t.get('episodes', '?')}"
                     f" demos, {t.get('steps', '?')} steps, {t.get('seconds', '?')} s wall on CPU)"))
    return rows


def vla_titration_rows(result: dict | None) -> list[tuple[str, str]]:
    """bench/vla_titration.py: whole titrations with the action policy on the tiny VLA policy."""
    if not result:
        return []
    t, runs = result.get("training", {}), result["runs"]
    groups: dict[tuple, list] = {}
    for r in runs:  # the same ending on several seeds is said once
        why = "" if r["completed"] else (r.get("failure_reason") or r["message"])[:140].replace("|", "/")
        groups.setdefault((r["outcome"], r.get("failed_subtask") or "?", why), []).append(r)
    parts = []
    for (outcome, at, why), rs in groups.items():
        seeds = ", ".join(str(r["seed"]) for r in rs)
        if rs[0]["completed"]:
            parts.append(f"seeds {seeds} completed, equivalence error "
                         + ", ".join(_f(r.get("equivalence_error_drops"), "+.1f") for r in rs) + " drops")
        else:
            parts.append(f"seeds {seeds} {outcome} at {at} ({why})")
    drew = sum(bool(r.get("draws_ml")) for r in runs)
    walls = [r["wall_s"] for r in runs]
    text = (f"{result['completed']}/{result['seeds']} completed: " + "; ".join(parts)
            + f"; drops {', '.join(str(r['drops_landed']) for r in runs)}; the VLA draw filled the pipette in "
            f"{drew}/{len(runs)}; {min(walls):.0f}-{max(walls):.0f} s wall per run")
    d = result.get("draw_in_twin")
    if d:
        text += (f". The draw alone in the twin: pipette filled {d['vla']['filled']}/{d['episodes']} (scripted "
                 f"{d['scripted']['filled']}/{d['episodes']}), gripper closed to {min(d['vla']['min_opening_mm']):.0f}-"
                 f"{max(d['vla']['min_opening_mm']):.0f} mm (the draw needs < 20; scripted "
                 f"{min(d['scripted']['min_opening_mm']):.0f})")
    load = result.get("load_average_before") or [float("nan")]
    text += (f" (tiny policy on {t.get('episodes', '?')} demos of the plan's 3 subtasks, {t.get('steps', '?')} steps, "
             f"{t.get('seconds', '?')} s wall on CPU, loss {_f(t.get('first_loss'), '.2f')} -> "
             f"{_f(t.get('last_loss'), '.3f')}; twin at {result.get('real_time_factor', '?')}x; load average "
             f"{load[0]:.1f} on {result.get('cpus', '?')} cores)")
    return [("One full titration driven by the VLA backend (hcl_short, whole graph in the twin; goal: completes)", text)]


def _f(x, spec):
    return "-" if x is None else format(x, spec)


def scenario_tables() -> list[str]:
    """The scenario library (bench/results/scenarios.json) and the long run, as markdown."""
    lines: list[str] = []
    lib = load("scenarios")
    if lib:
        summary = lib["summary"]
        seeds = max((b["runs"] for b in summary["scenarios"].values()), default=0)
        lines += ["", f"**Scenario library** (`agentchemist scenario run`, {seeds} seeds each, whole graph in the twin; "
                  "definitions in bench/results/scenarios.json):", "",
                  "| scenario | runs | as expected | completion | pH dev | endpoint within one drop | eq. error (drops, max) "
                  "| pKa error (max) | faults detected | clean runs with false alarm | task s (twin) | wall s |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for name, b in summary["scenarios"].items():
            lines.append(
                f"| {name} | {b['runs']} | {_f(b['expected_behaviour'], '.0%')} | {_f(b['completion'], '.0%')} "
                f"| {_f((b['ph_deviation'] or {}).get('mean_abs'), '.3f')} | {_f(b['endpoint_within_one_drop'], '.0%')} "
                f"| {_f((b['equivalence_error_drops'] or {}).get('max_abs'), '.2f')} "
                f"| {_f((b['pka_error'] or {}).get('max_abs'), '.3f')} "
                f"| {str(b['faults_detected']) + '/' + str(b['faults_injected']) if b['faults_injected'] else '-'} "
                f"| {b['clean_runs_with_false_alarm'] if b['clean_runs'] else '-'} "
                f"| {_f((b.get('task_s') or b['sim_s'] or {}).get('mean'), '.0f')} "
                f"| {_f((b['wall_s'] or {}).get('mean'), '.0f')} |")
        lines += ["", "| system | completion | pH deviation | anomaly accuracy | time per task |", "|---|---|---|---|---|"]
        for name, r in summary["paper_table4"].items():
            lines.append(f"| paper: {name} | {r['completion']:.0%} | {r['ph_deviation']:.2f} | {r['anomaly_accuracy']:.0%} "
                         f"| {r['time_s']} s (real robot) |")
        o = summary["ours"]
        plateau, jump = o.get("endpoint_on_plateau"), o.get("endpoint_on_jump")
        split = ""
        if plateau or jump:
            parts = []
            if plateau:
                parts.append(f"{plateau['ph_deviation']['mean_abs']:.3f} (max {plateau['ph_deviation']['max_abs']:.3f}) "
                             f"on a plateau, {plateau['runs']} runs")
            if jump:
                parts.append(f"{jump['ph_deviation']['mean_abs']:.2f} on the jump, {jump['runs']} runs where one drop "
                             f"moved the pH by {jump['last_drop_ph_step']['mean']:.2f} on average "
                             f"(> the goal {o['ph_deviation_goal']}), "
                             f"{_f(jump['endpoint_within_one_drop'], '.0%')} stopped on the first drop past the target")
            split = " (" + "; ".join(parts) + ")"
        lines.append(f"| **AgentChemist ROS, embedded non-LLM (twin)** | {_f(o['completion'], '.0%')} "
                     f"| {_f(o['ph_deviation'], '.2f')}{split} | {_f(o['anomaly_accuracy'], '.0%')} "
                     f"| {_f(o.get('task_time_s') or o['sim_time_s'], '.0f')} s twin time, "
                     f"{_f(o['wall_time_s'], '.0f')} s wall |")
    long = load("long_run")
    if long and long.get("runs"):
        r = long["runs"][0]
        lines += ["", f"**Long run**: {r.get('experiments_completed', 0)} experiments back to back, "
                  f"{r['sim_s'] / 3600:.1f} h simulated in {r['wall_s'] / 60:.0f} min wall, outcome {r['outcome']}; "
                  f"titrant-volume records equal the twin's landed drops: {r.get('records_match_truth')}; "
                  f"memory growth from the first to the last experiment {_f(r.get('memory_growth_mb'), '+.0f')} MB "
                  f"(peak {_f(r.get('memory_mb_peak'), '.0f')} MB)."]
    return lines


def update_readme() -> None:
    """The goal / now table between the bench markers of docs/benchmarks.md (the README links it; dated
    figures and commits are lab notes, not the user's document)."""
    readme = REPO / "docs" / "benchmarks.md"
    text = readme.read_text()
    block = table()
    if START in text and END in text:
        text = text[:text.index(START)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip() + "\n\n## Benchmarks\n" + block + "\n"
    readme.write_text(text)


def main() -> int:
    RESULTS.mkdir(parents=True, exist_ok=True)
    ok = run("twin", ["bench/twin.py", "--graph"])
    runs = sorted((REPO / "runs" / "bench").glob("exp-*/ground_truth.json"), key=lambda p: p.stat().st_mtime)
    if runs:
        ok &= run("fusion", ["bench/fusion_error.py", str(runs[-1].parent)])
    ok &= run("real-time factor", ["bench/rtf.py"])
    ok &= run("contention", ["bench/contention.py"], timeout=3 * 3600)
    ok &= run("audio", ["bench/audio_detector.py", "--drops", "100", "--seeds", "1"])
    ok &= run("audio two drops", ["bench/audio_two_drops.py"])
    ok &= run("dispenser", ["bench/dispenser.py"])
    ok &= run("adaptive dispensing", ["bench/adaptive_dispensing.py"], timeout=3 * 3600)
    ok &= run("bag timing", ["bench/bag_timing.py"])
    ok &= run("piper", ["bench/piper.py"])
    ok &= run("latency", ["bench/latency.py"])
    ok &= run("physics", ["bench/physics.py"])
    ok &= run("mujoco library", ["bench/mujoco_library.py"], timeout=4 * 3600)
    ok &= run("vision pipeline", ["bench/vision_pipeline.py"])
    ok &= run("vla", ["bench/vla.py"])
    ok &= run("vla titration", ["bench/vla_titration.py", "--train"], timeout=2 * 3600)
    ok &= run("fault campaign", ["bench/fault_campaign.py"], timeout=2 * 3600)
    ok &= run("coverage", ["bench/coverage.py", "--seeds", "20", "--unperturbed"])
    ok &= run("scenarios", ["bench/scenarios.py"], timeout=6 * 3600)
    record_rates()
    planner_accuracy()
    update_readme()
    print(table())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
