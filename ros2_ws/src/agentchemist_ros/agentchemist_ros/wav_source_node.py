"""wav_source: streams a WAV file as AudioChunk messages, in real time or sim time (the ROS clock), so
that recorded contact audio can be replayed into the audio supervisor."""
import array

import numpy as np
import soundfile as sf
from agentchemist_ros.common.guarded import GuardedNode
from std_msgs.msg import Header

from agentchemist_interfaces.msg import AudioChunk
from agentchemist_ros.common import topics
from agentchemist_ros.common.params import declare
from agentchemist_ros.common.qos import AUDIO
from agentchemist_ros.common.runner import spin_node
from agentchemist_ros.common.timeconv import node_now, to_msg


class WavSourceNode(GuardedNode):
    def __init__(self, **kwargs):
        super().__init__("wav_source", **kwargs)
        path = declare(self, "file", "", "WAV file to stream (mono or the first channel is used)")
        side = declare(self, "side", "right", "Gripper microphone topic to publish on (left|right)")
        self.chunk_s = declare(self, "chunk_s", 0.1, "Chunk length (s)", low=0.005, high=1.0)
        self.loop = declare(self, "loop", False, "Start again at the end of the file")
        if not path:
            raise ValueError("wav_source needs the 'file' parameter")
        try:
            data, self.rate = sf.read(path, dtype="int16", always_2d=True)
        except (RuntimeError, OSError) as exc:
            raise ValueError(f"wav_source: cannot read {path}: {exc}") from None
        if data.shape[1] > 1:
            self.get_logger().warn(f"{path} has {data.shape[1]} channels: streaming the first")
        self.samples = np.ascontiguousarray(data[:, 0])
        self.pub = self.create_publisher(AudioChunk, topics.audio_topic(side), AUDIO)
        self.n = max(1, int(round(self.chunk_s * self.rate)))
        self.position = 0
        self.start = None
        self.finished = False
        # Poll faster than the chunk period; publish every chunk whose time has come on the ROS clock.
        self.create_timer(self.chunk_s / 4.0, self.tick)
        self.get_logger().info(f"streaming {path}: {len(self.samples) / self.rate:.1f} s at {self.rate} Hz")

    def tick(self):
        now = node_now(self)
        if self.finished or now <= 0.0:
            return
        if self.start is None:
            self.start = now
        while self.start + (self.position + self.n) / self.rate <= now:
            if self.position >= len(self.samples):
                if not self.loop:
                    self.finished = True
                    self.get_logger().info("end of file")
                    return
                self.start += self.position / self.rate
                self.position = 0
            chunk = self.samples[self.position:self.position + self.n]
            msg = AudioChunk(header=Header(stamp=to_msg(self.start + self.position / self.rate),
                                           frame_id=f"{self.pub.topic_name.split('/')[2]}_mic"),
                             sample_rate=int(self.rate), channels=1)
            out = array.array("h")
            out.frombytes(chunk.tobytes())
            msg.data = out
            self.pub.publish(msg)
            self.position += len(chunk)


def main(args=None):
    spin_node(WavSourceNode, args)


if __name__ == "__main__":
    main()
