"""audio_capture: a contact microphone on the robot (PUI AOM-5024L in the gripper) through PortAudio
(sounddevice), 48 kHz 16-bit mono, published as AudioChunk. The device is chosen by name; a missing
device or library is a clear error at start-up, never silence. One node per gripper: robot.launch.py
starts left_audio_capture and right_audio_capture. Input overflows (ALSA xruns) and blocks dropped on a
full queue are counted and published on /diagnostics every diagnostics_period_s
(agentchemist.hardware.audio_capture.CaptureHealth)."""
import array
import queue

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from agentchemist_ros.common.guarded import GuardedNode
from std_msgs.msg import Header

from agentchemist.hardware.audio_capture import CaptureHealth
from agentchemist_interfaces.msg import AudioChunk
from agentchemist_ros.common import topics
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import AUDIO
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg


class AudioDeviceError(RuntimeError):
    pass


def find_input_device(sd, name: str) -> int:
    """Index of the first input device whose name contains `name` (case-insensitive)."""
    devices = sd.query_devices()
    inputs = [(i, d["name"]) for i, d in enumerate(devices) if d.get("max_input_channels", 0) > 0]
    for index, device_name in inputs:
        if name.lower() in device_name.lower():
            return index
    listed = ", ".join(n for _, n in inputs) or "none"
    raise AudioDeviceError(f"no audio input device matching '{name}' (input devices: {listed})")


class AudioCaptureNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("audio_capture", **kwargs)
        device = declare(self, "device", "AOM", "Input device name (substring match)")
        side = declare(self, "side", "right", "Gripper the microphone is in (left|right)")
        self.rate = declare(self, "sample_rate", 48000, "Sample rate (Hz)", low=8000, high=192000)
        self.chunk_s = declare(self, "chunk_s", 0.01, "Chunk length (s); 10 ms: bench/latency.py", low=0.005, high=1.0)
        diag_period = declare(self, "diagnostics_period_s", 1.0, "Period of the /diagnostics status (s)",
                              low=0.1, high=60.0)
        try:
            import sounddevice as sd
        except OSError as exc:  # PortAudio missing: Debian package libportaudio2
            raise AudioDeviceError(f"PortAudio is not available ({exc}); install libportaudio2") from None
        index = find_input_device(sd, device)
        self.queue: queue.Queue = queue.Queue(maxsize=200)
        self.pub = self.create_publisher(AudioChunk, topics.audio_topic(side), AUDIO)
        self.frame = f"{side}_gripper_mic"
        self.health = CaptureHealth(device=f"{device} (#{index})", sample_rate=int(self.rate))
        self.diag_pub = self.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.create_timer(diag_period, self.publish_diagnostics)
        self.stream = sd.InputStream(device=index, samplerate=self.rate, channels=1, dtype="int16",
                                     blocksize=int(self.rate * self.chunk_s), callback=self.on_audio)
        self.stream.start()
        self.close_with_node(self.stream.close)
        self.close_with_node(self.stream.stop)
        self.create_timer(self.chunk_s / 2.0, self.flush)

    def on_audio(self, indata, frames, time_info, status):
        # PortAudio's thread, called when a block is complete: its first sample was frames/rate ago.
        stamp = node_now(self) - frames / self.rate
        try:
            self.queue.put_nowait((stamp, np.array(indata[:, 0], dtype=np.int16), str(status)))
            queued = True
        except queue.Full:
            queued = False
        self.health.on_block(bool(getattr(status, "input_overflow", False)), queued)

    def publish_diagnostics(self):
        level, message, values = self.health.status()
        status = DiagnosticStatus(level=bytes([level]), name=f"{self.get_name()}: {self.frame}", message=message,
                                  hardware_id=values["device"],
                                  values=[KeyValue(key=k, value=v) for k, v in values.items()])
        self.diag_pub.publish(DiagnosticArray(header=Header(stamp=to_msg(node_now(self))), status=[status]))

    def flush(self):
        while not self.queue.empty():
            stamp, samples, status = self.queue.get_nowait()
            if status:
                self.get_logger().warn(f"audio input status: {status}")
            msg = AudioChunk(header=Header(stamp=to_msg(stamp), frame_id=self.frame), sample_rate=int(self.rate),
                             channels=1)
            out = array.array("h")
            out.frombytes(samples.tobytes())
            msg.data = out
            self.pub.publish(msg)


def main(args=None):
    spin_node(AudioCaptureNode, args)


if __name__ == "__main__":
    main()
