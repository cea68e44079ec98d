"""drop_timeout is judged on the audio the supervisor has heard, not on its clock: in the one-process graph
its clock is the twin's, while its audio chunks can still be queued (a library run at load 17 raised
"no drop heard for 3.3 s while dispensing" with the drops in the unread chunks). Audio that keeps
coming but lags the clock by more than the window raises nothing; audio that stops coming leaves the
clock to judge, and the timeout comes."""
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from std_msgs.msg import Header  # noqa: E402

from agentchemist_interfaces.msg import Anomaly, AudioChunk, DispenserState  # noqa: E402
from agentchemist_ros.audio_supervisor_node import AudioSupervisorNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import AUDIO, FSM, RELIABLE  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.common.timeconv import to_msg  # noqa: E402

RATE, CHUNK_S = 48000, 0.1
#: before a run's first drop the window is 40 s (priming): the audio lags the clock by more than that
LAG_S, START_S, RUN_S = 45.0, 50.0, 48.0


def test_lagging_audio_is_not_silence_but_stopped_audio_is():
    rclpy.init()
    try:
        sup = AudioSupervisorNode(parameter_overrides=[Parameter("use_sim_time", value=True)])
        probe = Node("lag_probe")
        clock = probe.create_publisher(Clock, "/clock", 10)
        audio = probe.create_publisher(AudioChunk, topics.audio_topic("right"), AUDIO)
        state = probe.create_publisher(DispenserState, topics.DISPENSER_STATE, FSM)
        timeouts = []
        probe.create_subscription(Anomaly, topics.ANOMALIES,
                                  lambda m: timeouts.append(m.description) if m.kind == "drop_timeout" else None,
                                  RELIABLE)
        executor = make_executor()
        for n in (sup, probe):
            executor.add_node(n)
        end = time.monotonic() + 20.0
        while audio.get_subscription_count() == 0 or state.get_subscription_count() == 0:
            executor.spin_once(timeout_sec=0.02)
            assert time.monotonic() < end, "the audio supervisor did not subscribe"
        rng = np.random.default_rng(0)

        def tick(t, chunk_t0=None):
            clock.publish(Clock(clock=to_msg(t)))
            if chunk_t0 is not None:
                samples = rng.normal(0.0, 30.0, int(RATE * CHUNK_S)).astype(np.int16)
                msg = AudioChunk(header=Header(stamp=to_msg(chunk_t0), frame_id="right_gripper_mic"),
                                 sample_rate=RATE, channels=1)
                msg.data = samples.tobytes()
                audio.publish(msg)
            for _ in range(3):
                executor.spin_once(timeout_sec=0.005)

        tick(START_S, START_S - LAG_S)
        state.publish(DispenserState(stamp=to_msg(START_S), experiment_id="lag", subtask_id="titrate", mode="drops",
                                     state="MOTION", active=True, drop_interval_s=0.5))
        for _ in range(20):
            executor.spin_once(timeout_sec=0.01)
        # 48 s of clock while squeezing; the audio keeps coming, 45 s behind the clock.
        t = START_S
        while t < START_S + RUN_S:
            t = round(t + CHUNK_S, 6)
            tick(t, chunk_t0=round(t - LAG_S, 6))
        assert timeouts == [], timeouts
        # The audio stops: after the stream is silent in wall time the clock judges, and the timeout comes.
        deadline = time.monotonic() + 20.0
        while not timeouts and time.monotonic() < deadline:
            t = round(t + CHUNK_S, 6)
            tick(t)
        assert timeouts and "no drop heard" in timeouts[0]
        for n in (sup, probe):
            n.destroy_node()
    finally:
        rclpy.try_shutdown()
