"""Readiness check of the robot (or the twin) before an experiment: `agentchemist doctor`.

Four kinds of check, each a `Check` with a status a person reads at a glance:
- CAN: each expected SocketCAN interface exists, is up, and runs at its rate (1 Mbit/s for the Piper
  arms, 500 kbit/s for the Tracer base).
  Read from `ip -details -json link show` where `ip` exists, else /sys/class/net/<name>/ (operstate;
  sysfs has no bitrate, so it is then 'unknown'). An interface that is not there is 'not present'.
- topics: every expected topic alive at its expected rate, measured from message arrivals (wall
  clock) by the ROS probe (agentchemist_ros.tools.doctor); this module only judges the counts.
- calibrations: each expected electrode has a calibration in the user store, inside its window, fresh.
- diagnostics: the last /diagnostics status of every component that publishes one (the instrument
  drivers' links, the microphones' overflow counters), ERROR as a failure.
- clocks: the header stamps of the sensor streams agree with the receiving node's clock (a host with a
  wrong clock or a driver stamping with the wrong one shows up here), and /clock advances when the
  graph runs on sim time.
The expectations (topics, rates, interfaces, probes) are profiles in config/doctor.yaml.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from agentchemist import exit_codes
from agentchemist.hardware.instruments.electrode import Acceptance, CalibrationError, CalibrationStore
from agentchemist.paths import config_dir

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
CAN_BITRATE = 1_000_000


@dataclass(frozen=True)
class Check:
    group: str
    name: str
    status: str
    detail: str


@dataclass(frozen=True)
class TopicExpectation:
    topic: str
    type: str               # package/msg/Name
    min_hz: float


@dataclass
class TopicObservation:
    count: int = 0
    first: float | None = None        # wall time of the first and last arrival
    last: float | None = None
    max_skew_s: float = 0.0           # largest |receive time on the node's clock - header stamp|

    def add(self, wall: float, skew_s: float | None = None) -> None:
        self.count += 1
        self.first = wall if self.first is None else self.first
        self.last = wall
        if skew_s is not None:
            self.max_skew_s = max(self.max_skew_s, abs(skew_s))

    @property
    def rate_hz(self) -> float:
        if self.count < 2 or self.last == self.first:
            return 0.0
        return (self.count - 1) / (self.last - self.first)


@dataclass(frozen=True)
class Profile:
    name: str
    can_interfaces: tuple[str, ...] = ()
    can_bitrates: tuple[int, ...] = ()      # expected bit rate of each interface (1 Mbit/s: the Piper)
    topics: tuple[TopicExpectation, ...] = ()
    probes: tuple[str, ...] = ()
    max_skew_s: float = 2.0
    sim_time: bool = False
    acceptance: Acceptance = field(default_factory=Acceptance)


def load_profile(name: str, path: Path | None = None) -> Profile:
    data = yaml.safe_load((path or config_dir() / "doctor.yaml").read_text())
    profiles = data.get("profiles", {})
    if name not in profiles:
        raise ValueError(f"no doctor profile {name!r}: known {sorted(profiles)}")
    p = profiles[name]
    can = p.get("can_interfaces") or {}
    can = can if isinstance(can, dict) else {n: CAN_BITRATE for n in can}
    return Profile(name=name, can_interfaces=tuple(can), can_bitrates=tuple(int(b) for b in can.values()),
                   topics=tuple(TopicExpectation(t["topic"], t["type"], float(t["min_hz"]))
                                for t in p.get("topics", ())),
                   probes=tuple(p.get("probes", ())), max_skew_s=float(p.get("max_skew_s", 2.0)),
                   sim_time=bool(p.get("sim_time", False)),
                   acceptance=Acceptance(**p.get("acceptance", {})))


# ----------------------------------------------------------------------------------------------- CAN
def read_can_links(names, sys_net: Path = Path("/sys/class/net"), ip_json: str | None = None) -> dict:
    """{name: {"present", "up", "bitrate" (None = unknown)}} for each interface in `names`."""
    if ip_json is None and shutil.which("ip"):
        try:
            ip_json = subprocess.run(["ip", "-details", "-json", "link", "show"], capture_output=True,
                                     text=True, timeout=5, check=False).stdout
        except (OSError, subprocess.SubprocessError):
            ip_json = None
    by_name = {}
    if ip_json:
        try:
            for link in json.loads(ip_json):
                by_name[link.get("ifname")] = link
        except ValueError:
            by_name = {}
    out = {}
    for name in names:
        link = by_name.get(name)
        if link is not None:
            info = (link.get("linkinfo") or {}).get("info_data") or {}
            bitrate = (info.get("bittiming") or {}).get("bitrate")
            up = "UP" in link.get("flags", ()) and link.get("operstate") in ("UP", "UNKNOWN")
            out[name] = {"present": True, "up": up, "bitrate": bitrate}
        elif (sys_net / name).exists():
            state = (sys_net / name / "operstate").read_text().strip() if (sys_net / name / "operstate").exists() else ""
            out[name] = {"present": True, "up": state in ("up", "unknown"), "bitrate": None}
        else:
            out[name] = {"present": False, "up": False, "bitrate": None}
    return out


def can_checks(links: dict, bitrates: dict | None = None) -> list[Check]:
    """`bitrates`: expected bit/s per interface (default 1 Mbit/s, the Piper's; the Tracer base runs 500k)."""
    checks = []
    for name, link in links.items():
        want = (bitrates or {}).get(name, CAN_BITRATE)
        if not link["present"]:
            checks.append(Check("CAN", name, FAIL, "not present"))
        elif not link["up"]:
            checks.append(Check("CAN", name, FAIL, "down (sudo ip link set up; docs/robot.md)"))
        elif link["bitrate"] is None:
            checks.append(Check("CAN", name, WARN, "up, bitrate unknown"))
        elif link["bitrate"] != want:
            checks.append(Check("CAN", name, FAIL, f"up at {link['bitrate']} bit/s, expected {want}"))
        else:
            checks.append(Check("CAN", name, OK, f"up at {want / 1e6:g} Mbit/s"))
    return checks


# ---------------------------------------------------------------------------------------------- topics
def topic_checks(expected, observed: dict[str, TopicObservation], max_skew_s: float) -> list[Check]:
    checks = []
    for exp in expected:
        obs = observed.get(exp.topic) or TopicObservation()
        if obs.count == 0:
            checks.append(Check("topics", exp.topic, FAIL, "missing"))
            continue
        rate = obs.rate_hz
        if rate < exp.min_hz:
            checks.append(Check("topics", exp.topic, FAIL if obs.count < 2 else WARN,
                                f"{rate:.1f} Hz < {exp.min_hz:g} Hz ({obs.count} msgs)"))
        elif obs.max_skew_s > max_skew_s:
            checks.append(Check("clocks", exp.topic, FAIL,
                                f"stamps off the node clock by {obs.max_skew_s:.1f} s (> {max_skew_s:g} s)"))
        else:
            checks.append(Check("topics", exp.topic, OK, f"{rate:.1f} Hz"))
    return checks


def ntp_synchronised() -> bool | None:
    """The host clock's NTP state from `timedatectl` (systemd), None when it cannot be asked."""
    if not shutil.which("timedatectl"):
        return None
    try:
        out = subprocess.run(["timedatectl", "show", "-p", "NTPSynchronized", "--value"], capture_output=True,
                             text=True, timeout=5, check=False).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"yes": True, "no": False}.get(out)


def clock_checks(sim_time: bool, clock: TopicObservation | None, sim_advance_s: float | None,
                 ntp: bool | None = None) -> list[Check]:
    """Sim time: /clock must advance. Wall time: the host clock should be NTP-synchronised (the robot host and
    the GPU workstation stamp messages the other judges by age); unknown is a warning, not a failure."""
    if not sim_time:
        if ntp is None:
            return [Check("clocks", "host clock", WARN, "NTP state unknown (no timedatectl)")]
        return [Check("clocks", "host clock", OK if ntp else WARN,
                      "NTP synchronised" if ntp else "not NTP synchronised (stamps across hosts may disagree)")]
    if clock is None or clock.count == 0:
        return [Check("clocks", "/clock", FAIL, "use_sim_time but no /clock")]
    if not sim_advance_s or sim_advance_s <= 0:
        return [Check("clocks", "/clock", FAIL, "/clock does not advance")]
    return [Check("clocks", "/clock", OK, f"advancing ({sim_advance_s:.1f} sim s seen)")]


# -------------------------------------------------------------------------------------------- calibration
def calibration_checks(probes, store: CalibrationStore, now: float, acceptance: Acceptance) -> list[Check]:
    checks = []
    try:
        stored = store.load()
    except CalibrationError as exc:
        return [Check("calibration", p, FAIL, str(exc)) for p in probes]
    for probe in probes:
        cal = stored.get(probe)
        if cal is None:
            checks.append(Check("calibration", probe, FAIL, f"none in {store.path}"))
            continue
        problem = cal.usable(now, acceptance)
        summary = f"slope {cal.slope_pct:.1f} %, offset {cal.offset_mv:+.1f} mV, {cal.age_h(now):.1f} h old"
        checks.append(Check("calibration", probe, FAIL if problem else OK, problem or summary))
    return checks


def diagnostic_checks(statuses: dict[str, tuple[int, str]]) -> list[Check]:
    """The latest /diagnostics status of each component (name -> (level, message)): the drivers' own view
    (instrument links, microphones' overflow counters). Level 0 OK, 1 WARN, 2 ERROR, 3 STALE."""
    status = {0: OK, 1: WARN, 2: FAIL, 3: WARN}
    return [Check("diagnostics", name, status.get(level, WARN), message) for name, (level, message) in
            sorted(statuses.items())]


def exit_code(checks: list[Check], strict: bool = False) -> int:
    """0: ready; 1: not ready, a check failed (or, strict, warned): the one exit-code table's (exit_codes)."""
    if any(c.status == FAIL for c in checks) or (strict and any(c.status == WARN for c in checks)):
        return exit_codes.NO
    return exit_codes.OK


def render(checks: list[Check], console, title: str = "agentchemist doctor") -> None:
    from rich.table import Table
    style = {OK: "[green]ok[/green]", WARN: "[yellow]WARN[/yellow]", FAIL: "[bold red]FAIL[/bold red]",
             SKIP: "[dim]skip[/dim]"}
    table = Table(title=title, show_lines=False)
    table.add_column("", no_wrap=True)
    table.add_column("check")
    table.add_column("what", no_wrap=True)
    table.add_column("detail")
    for c in sorted(checks, key=lambda c: (c.status != FAIL, c.status != WARN)):
        table.add_row(style.get(c.status, c.status), c.group, c.name, c.detail)
    console.print(table)
    failed = sum(c.status == FAIL for c in checks)
    console.print("[green]ready[/green]" if not failed else f"[bold red]not ready: {failed} check(s) failed[/bold red]")
