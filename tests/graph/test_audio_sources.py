"""The audio sources: wav_source streams a WAV into the audio supervisor, which hears its drops;
audio_capture refuses to start without its microphone, naming what it looked for."""
import time

import numpy as np
import pytest
import soundfile as sf

rclpy = pytest.importorskip("rclpy")

from rclpy.node import Node  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402

from agentchemist.sim.audio import AudioEventTruth, ContactAudioConfig, ContactAudioSynth  # noqa: E402
from agentchemist_interfaces.msg import AudioEvent  # noqa: E402
from agentchemist_ros.audio_capture_node import AudioDeviceError, find_input_device  # noqa: E402
from agentchemist_ros.audio_supervisor_node import AudioSupervisorNode  # noqa: E402
from agentchemist_ros.common import topics  # noqa: E402
from agentchemist_ros.common.qos import RELIABLE  # noqa: E402
from agentchemist_ros.common.runner import make_executor  # noqa: E402
from agentchemist_ros.wav_source_node import WavSourceNode  # noqa: E402

DROPS = [0.4, 0.9, 1.5, 2.2, 2.6]


def test_wav_source_feeds_the_audio_supervisor(tmp_path):
    synth = ContactAudioSynth(ContactAudioConfig(snr_db=25.0, seed=3))
    for t in DROPS:
        synth.schedule(AudioEventTruth(time=t, kind="droplet", duration=0.05, label="drop"))
    wav = tmp_path / "drops.wav"
    sf.write(wav, synth.render(0.0, int(3.2 * 48000)), 48000, subtype="PCM_16")
    rclpy.init()
    try:
        source = WavSourceNode(parameter_overrides=[Parameter("file", value=str(wav)),
                                                    Parameter("chunk_s", value=0.05)])
        supervisor = AudioSupervisorNode()
        probe = Node("audio_probe")
        events = []
        probe.create_subscription(AudioEvent, topics.AUDIO_EVENTS, events.append, RELIABLE)
        executor = make_executor()
        for n in (source, supervisor, probe):
            executor.add_node(n)
        end = time.monotonic() + 30  # 3.2 s of audio in real time; generous for a loaded machine
        while time.monotonic() < end and not (source.finished and len(events) >= len(DROPS)):
            executor.spin_once(timeout_sec=0.05)
        for _ in range(20):
            executor.spin_once(timeout_sec=0.05)
        droplets = [e for e in events if e.kind == "droplet"]
        assert len(droplets) == len(DROPS)
        # Nothing was being dispensed: every drop is anomalous and counts no volume.
        assert all(e.classification == "anomalous" and e.quantity == 0.0 for e in droplets)
        onsets = sorted(e.start.sec + e.start.nanosec * 1e-9 for e in droplets)
        starts = np.diff(onsets)
        assert np.allclose(starts, np.diff(DROPS), atol=0.01)
        for n in (source, supervisor, probe):
            n.destroy_node()
    finally:
        rclpy.try_shutdown()


class _FakeSoundDevice:
    @staticmethod
    def query_devices():
        return [{"name": "HDA Intel PCH: ALC257 Analog", "max_input_channels": 2},
                {"name": "HDMI 0", "max_input_channels": 0},
                {"name": "USB Audio AOM-5024L", "max_input_channels": 1}]


def test_input_device_found_by_name_or_refused_with_the_list():
    assert find_input_device(_FakeSoundDevice, "aom") == 2
    with pytest.raises(AudioDeviceError, match="no audio input device matching 'Zoom'.*ALC257"):
        find_input_device(_FakeSoundDevice, "Zoom")
