"""The lab_sim node's settings: pace, stream rates, what it publishes (declared as its ROS parameters)."""
from __future__ import annotations

from dataclasses import dataclass

from agentchemist.params import param
from agentchemist.sim.camera import CAMERA_NAMES


@dataclass(frozen=True)
class LabSimConfig:
    scenario: str = param("", description="Scenario YAML (config/scenarios/*.yaml); required")
    real_time_factor: float = param(0.0, low=0.0, high=1000.0,
                                    description="Sim seconds per wall second; 0 = the scenario's value (capped at "
                                                "max_real_time_factor)")
    max_real_time_factor: float = param(50.0, low=0.1, high=1000.0, description="Upper bound of the pace")
    # Batch runs (scenario runner, benchmarks, demo): no pace at all. What keeps the twin from running
    # ahead is not the pace but the lock-step, the acknowledgements and the peer waits; in one process each
    # tick's messages are queued (delivered in the publish call) before the next tick, which goes in behind
    # them. A pace timer under 50x lost a fifth of the wall time to waiting for its period.
    free_run: bool = param(False, description="Tick as fast as the graph keeps up: the next tick is queued on the "
                                              "executor behind the last one's messages (the pace timer then only "
                                              "looks at held ticks, every free_run_look_s)")
    free_run_look_s: float = param(0.005, unit="wall s", low=0.001, high=0.1,
                                   description="With free_run: how often a held tick is looked at (the lock-step's "
                                               "and the peer waits' wall timeouts)")
    clock_period: float = param(0.05, unit="sim s", low=0.001, high=0.5, description="Sim time per /clock tick")
    ph_rate_hz: float = param(5.0, unit="Hz (sim time)", low=0.1, high=100.0, description="pH meter publish rate")
    balance_rate_hz: float = param(5.0, unit="Hz (sim time)", low=0.1, high=50.0,
                                   description="Balance publish rate (the solid pour reads it between pulses)")
    joint_state_rate_hz: float = param(10.0, unit="Hz (sim time)", low=1.0, high=500.0,
                                       description="/joint_states publish rate")
    audio_chunk_s: float = param(0.1, unit="s", low=0.01, high=1.0, description="Audio per AudioChunk message")
    camera_rate_hz: float = param(0.5, unit="Hz (sim time)", low=0.0, high=30.0,
                                  description="Camera rate; 0 = the scenario's")
    # Rendering audio and images nobody listens to is most of the twin's cost at 50x.
    publish_only_with_subscribers: bool = param(True, description="Skip rendering audio/camera streams (and "
                                                                  "markers) that have no subscriber")
    cameras: tuple = param(("front",), choices=CAMERA_NAMES, description="Cameras to render")
    # instruments:=serial (docs/robot.md): the pH meter and balance answer on pseudo-terminals in
    # instrument_dir, and the ph_meter / balance driver nodes publish their readings instead of lab_sim.
    instruments: str = param("topics", choices=("topics", "serial"),
                             description="topics: lab_sim publishes the pH and balance readings; serial: "
                                         "simulated instruments on ptys, read by the driver nodes")
    ph_calibration: str = param("scenario", choices=("scenario", "store", "none"),
                                description="Electrode calibration the twin's pH meter corrects readings with: "
                                            "scenario (its electrode_calibration, fresh by default), store (the "
                                            "user's calibration store) or none (uncorrected, never flagged)")
    instrument_dir: str = param("/tmp/agentchemist_instruments",
                                description="Folder of the ptys' links (ph_meter, balance) with instruments serial")
    ph_dialect: str = param("tps_continuous", choices=("tps_continuous", "hanna_ras"),
                            description="Dialect of the simulated pH meter (instruments serial)")
    balance_dialect: str = param("mt_sics", choices=("mt_sics", "sartorius_sbi"),
                                 description="Dialect of the simulated balance (instruments serial)")
    ground_truth_period: float = param(1.0, unit="sim s", low=0.05, high=60.0,
                                       description="Time between ground-truth messages")
    start_time: float = param(1.0, unit="sim s", low=0.0, high=1e9, description="Sim time of the first tick")
    # Wall-clock rate, not sim time: the markers are for a person watching rviz, and at 50x a sim-time rate
    # would flood it with 100 arrays a second.
    marker_rate_hz: float = param(2.0, unit="Hz (wall)", low=0.0, high=30.0,
                                  description="Bench markers for rviz (/lab/bench_markers); 0 = off")
    lockstep_timeout_s: float = param(0.25, unit="wall s", low=0.0, high=5.0,
                                      description="How long a tick waits for the gripper controller's answer while "
                                                  "it streams commands (0 = no lock-step)")
    peer_wait_limit_s: float = param(60.0, unit="wall s", low=0.0, high=600.0,
                                     description="How long the clock stands still while a node waits for a peer's "
                                                 "answer (PeerWait; above the supervisor's 2 x agent_wait_s, so a "
                                                 "dead peer is reported by the one waiting; 0 = never)")
    # Not below 1 s: an agent acknowledges at most every clock_ack_period_s <= 1 s of sim time
    # (common/clock_acks.py), so one that has caught up always acknowledges before the twin waits on it.
    max_lead_s: float = param(2.0, unit="sim s", low=1.0, high=600.0,
                              description="How far the clock may run ahead of the slowest agent that "
                                          "acknowledges it (ClockAck, agents in their own processes)")
    ack_dead_s: float = param(10.0, unit="wall s", low=0.0, high=600.0,
                              description="An agent silent this long is not waited for (0 = never wait for "
                                          "acknowledgements)")
    # Beside Gazebo, Gazebo owns /clock and the arms' joint states: the twin then supplies only chemistry.
    publish_clock: bool = param(True, description="Publish /clock; false beside Gazebo: the twin then follows the "
                                                  "ROS clock (use_sim_time true) instead of pacing itself")
    arm_backend: str = param("", choices=("", "kinematic", "mujoco"),
                             description="Arms and cameras: kinematic (the twin's own) or mujoco (physics, RGB-D "
                                         "renders); empty = the scenario's arm_backend")
    publish_joint_states: bool = param(True, description="Publish /joint_states (false when ros2_control "
                                                         "publishes them)")

    def pace(self, scenario_rtf: float) -> float:
        """Sim seconds per wall second: this config's factor, else the scenario's, capped."""
        return min(self.real_time_factor or scenario_rtf, self.max_real_time_factor)

    def serial_bench(self, context, twin, streams):
        """instruments serial: the twin's pH meter and balance on ptys (sim/serial_instruments.SerialBench),
        fed by `twin` when `streams` says a reading is due, closed when `context` (the node's rclpy context)
        shuts down. With instruments topics: a stand-in that does nothing and is false."""
        from agentchemist.sim.serial_instruments import NO_SERIAL_BENCH, SerialBench
        if self.instruments != "serial":
            return NO_SERIAL_BENCH
        bench = SerialBench(self.instrument_dir, ph_dialect=self.ph_dialect, balance_dialect=self.balance_dialect,
                            twin=twin, streams=streams)
        context.on_shutdown(bench.close)
        return bench

    def camera_period(self, scenario_rate_hz: float) -> float:
        return 1.0 / (self.camera_rate_hz or scenario_rate_hz)

    @property
    def marker_period(self) -> float:
        """Wall seconds between bench marker arrays; 0 = none."""
        return 1.0 / self.marker_rate_hz if self.marker_rate_hz > 0.0 else 0.0
