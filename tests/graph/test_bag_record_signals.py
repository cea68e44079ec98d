"""`agentchemist bag record` stops cleanly on SIGTERM and on SIGINT, in a real process without a terminal
(issue 40: under launch, systemd, `docker stop` or as a background job the bag was lost, with no
metadata.yaml). A publisher in this test gives the bag something to hold, so the test also checks that the
closed bag reads back."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from agentchemist.bag import BagReader


def _ignore_sigint():
    # What a non-interactive shell does to a job started with `&`: SIGINT ignored when the process starts.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_record_closes_the_bag_on_a_signal(sig, tmp_path):
    import rclpy
    from std_msgs.msg import String

    rclpy.init()
    node = rclpy.create_node("bag_signal_talker")
    pub = node.create_publisher(String, "/agentchemist/console_probe", 10)
    out = tmp_path / "bag"
    proc = subprocess.Popen([sys.executable, "-m", "agentchemist_ros.tools.bag_cli", "record",
                             "/agentchemist/console_probe", "-o", str(out), "--no-progress"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_ignore_sigint, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 60
        sent = 0
        while time.monotonic() < deadline and sent < 20:
            pub.publish(String(data=f"m{sent}"))
            if pub.get_subscription_count() > 0:
                sent += 1  # counted once the recorder is subscribed
            rclpy.spin_once(node, timeout_sec=0.1)
        assert sent == 20, f"the recorder subscribed for {sent} of 20 messages in 60 s: {proc.poll()}"
        time.sleep(1.0)
        proc.send_signal(sig)
        output, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        node.destroy_node()
        rclpy.try_shutdown()
    assert proc.returncode == 0, output
    assert "Traceback" not in output
    assert "stopped by a signal" in output, output
    assert (out / "metadata.yaml").is_file(), sorted(p.name for p in out.iterdir())
    with BagReader(out) as reader:
        info = reader.info()
    assert info.count >= 15, info  # the first few may come before discovery settles both ways
