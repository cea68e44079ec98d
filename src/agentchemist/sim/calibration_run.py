"""Run the gravimetric pipette calibration in the twin, under the conditions of a titration: the real
DispenserController squeezes (same control period, same pause after each heard drop), drops are
counted by the audio detector on the twin's contact audio (same chunking and latency as the node), and
the balance is read once it settles. Drop size depends on how a drop forms, so calibrating any other
way biases the audio channel.

    samples = calibration_samples(load_scenario("config/scenarios/calibration_naoh.yaml"), rate_mm_s=0.1)
    cal = fit_calibration(samples, density_g_ml=1.0, rate_mm_s=0.1, liquid="naoh 0.1 M")
"""
from __future__ import annotations

from agentchemist.control.calibration import CalibrationError, CalibrationSample
from agentchemist.control.dispenser import DispenseGoal, DispenserConfig, DispenserController
from agentchemist.perception.audio import DetectorConfig, StreamingDetector
from agentchemist.sim.lab import LabTwin
from agentchemist.sim.scenario import Scenario

SAMPLE_RATE = 48000
AUDIO_CHUNK_S = 0.1      #: as lab_sim publishes
PHYSICS_STEP_S = 0.01


class _Bench:
    def __init__(self, scenario: Scenario):
        self.twin = LabTwin(scenario)
        self.side = scenario.pipette.held_by
        self.detector = StreamingDetector(DetectorConfig(sample_rate=SAMPLE_RATE))
        self.now = 0.0
        self.audio_t = 0.0
        self.drops_heard = 0
        self.heard_at: list[float] = []

    def advance(self, seconds: float, controller: DispenserController | None = None,
                control_period: float = 0.05) -> None:
        end = self.now + seconds
        next_control = self.now
        while self.now < end - 1e-9:
            self.now = round(self.now + PHYSICS_STEP_S, 9)
            self.twin.step(self.now)
            while self.audio_t + AUDIO_CHUNK_S <= self.now:
                chunk = self.twin.audio(self.side, self.audio_t, int(AUDIO_CHUNK_S * SAMPLE_RATE))
                for event in self.detector.process(chunk, self.audio_t):
                    if event.kind == "droplet":
                        self.drops_heard += 1
                        self.heard_at.append(event.onset)
                        if controller is not None:
                            controller.on_drop(event.onset)
                self.audio_t = round(self.audio_t + AUDIO_CHUNK_S, 9)
            if controller is not None and self.now >= next_control - 1e-9:
                next_control += control_period
                out = controller.update(self.now, self.twin.gripper_opening_m(self.side) * 1000.0)
                self.twin.command_gripper(self.side, out.command_opening_mm / 1000.0, self.now)

    def mass(self) -> float:
        reading = self.twin.read_balance(self.now)
        if reading is None:
            raise CalibrationError("the balance gave no reading")
        return float(reading.value)


def calibration_samples(scenario: Scenario, *, rate_mm_s: float = 0.1, samples: int = 12,
                        drops_per_sample: int = 8, pause_s: float = 1.0, settle_s: float = 4.0,
                        control_period_s: float = 0.05) -> list[CalibrationSample]:
    """Prime the pipette, then `samples` times: dispense `drops_per_sample` drops one at a time
    (a `pause_s` hold after each, as when acting only on a settled pH), let the balance settle, and
    record (displacement since priming, mass since priming, drops since priming)."""
    bench = _Bench(scenario)
    sp = scenario.pipette
    bench.twin.command_gripper(bench.side, sp.contact_opening_mm / 1000.0, 0.0)
    bench.advance(2.0)
    drawn = bench.twin.draw(next(iter(scenario.titrant)), sp.capacity_ml, bench.now)
    if not drawn.accepted:
        raise CalibrationError(f"cannot fill the pipette: {drawn.reason}")
    config = DispenserConfig(drop_pause_s=pause_s, near_target_ml=0.0, control_period_s=control_period_s)
    goal = DispenseGoal(target_volume_ml=sp.capacity_ml * 0.9, rate_mm_s=rate_mm_s, settle_each_drop=True)

    def new_controller():
        return DispenserController(config, goal, start_opening_mm=bench.twin.gripper_opening_m(bench.side) * 1000.0,
                                   now=bench.now)

    controller = new_controller()
    limit = bench.now + 60.0
    while bench.drops_heard == 0:          # priming: squeeze until the first drop is heard
        if bench.now > limit:
            raise CalibrationError("no drop heard within 60 s of squeezing: check the pipette")
        bench.advance(control_period_s, controller, control_period_s)
    bench.advance(settle_s)
    start_opening = bench.twin.gripper_opening_m(bench.side) * 1000.0
    tare, drops0 = bench.mass(), bench.drops_heard
    out = []
    for _ in range(samples):
        controller = new_controller()
        target = bench.drops_heard + drops_per_sample
        limit = bench.now + 120.0
        while bench.drops_heard < target:
            if bench.now > limit:
                raise CalibrationError("the pipette stopped dripping during calibration")
            bench.advance(control_period_s, controller, control_period_s)
        # Finish the pause after the last drop, then hold still while the balance settles.
        bench.advance(pause_s, controller, control_period_s)
        bench.advance(settle_s)
        displacement = start_opening - bench.twin.gripper_opening_m(bench.side) * 1000.0
        out.append(CalibrationSample(displacement, bench.mass() - tare, bench.drops_heard - drops0))
    return out
