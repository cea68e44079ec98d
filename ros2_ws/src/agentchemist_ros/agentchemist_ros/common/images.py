"""sensor_msgs/Image <-> numpy for the encodings we use: rgb8, bgr8, mono8, 16UC1 (depth in mm: the RealSense
and Orbbec drivers, the MuJoCo twin), 32FC1 (depth in m: Gazebo's bridge).

Decoding (to_rgb) goes through cv_bridge where it is installed (the robot image: ros-jazzy-cv-bridge),
after the same size checks; here (PyPI wheels, no cv_bridge) a numpy conversion does it. Only the numpy
path runs in this repository's tests and benchmarks (bench/vision_pipeline.py: 0.08 ms per 640x480
frame); the cv_bridge path has not been run here. Encoding (to_msg) is numpy everywhere (the twin)."""
import numpy as np
from sensor_msgs.msg import Image

try:
    from cv_bridge import CvBridge
    _BRIDGE = CvBridge()
except ImportError:     # no cv_bridge wheel on PyPI: the numpy conversion below
    _BRIDGE = None

_ENCODINGS = {"rgb8": (np.uint8, 3), "bgr8": (np.uint8, 3), "mono8": (np.uint8, 1), "16UC1": (np.uint16, 1),
              "32FC1": (np.float32, 1)}


class ImageEncodingError(ValueError):
    pass


def to_msg(array: np.ndarray, encoding: str = "rgb8", header=None) -> Image:
    if encoding not in _ENCODINGS:
        raise ImageEncodingError(f"unsupported encoding {encoding!r} (supported: {sorted(_ENCODINGS)})")
    dtype, channels = _ENCODINGS[encoding]
    array = np.ascontiguousarray(array, dtype=dtype)
    msg = Image()
    if header is not None:
        msg.header = header
    msg.height, msg.width = int(array.shape[0]), int(array.shape[1])
    msg.encoding = encoding
    msg.is_bigendian = 0
    msg.step = msg.width * channels * array.itemsize
    msg.data = array.tobytes()
    return msg


def to_rgb(msg: Image) -> np.ndarray:
    """An RGB (or single-channel) numpy view of the image; raises ImageEncodingError on bad input."""
    if msg.encoding not in _ENCODINGS:
        raise ImageEncodingError(f"unsupported image encoding {msg.encoding!r}")
    dtype, channels = _ENCODINGS[msg.encoding]
    itemsize = np.dtype(dtype).itemsize
    if msg.height == 0 or msg.width == 0:
        raise ImageEncodingError("empty image (0 pixels)")
    if msg.step < msg.width * channels * itemsize or len(msg.data) < msg.step * msg.height:
        raise ImageEncodingError(
            f"image of {msg.width}x{msg.height} {msg.encoding} needs {msg.step * msg.height} bytes, "
            f"got {len(msg.data)} (step {msg.step})")
    if _BRIDGE is not None:
        wanted = "rgb8" if channels == 3 else "passthrough"
        return np.ascontiguousarray(_BRIDGE.imgmsg_to_cv2(msg, desired_encoding=wanted))
    raw = np.frombuffer(bytes(msg.data), dtype=np.uint8).reshape(msg.height, msg.step)
    raw = raw[:, : msg.width * channels * itemsize]
    arr = raw.view(dtype).reshape(msg.height, msg.width, channels) if channels > 1 else \
        raw.view(dtype).reshape(msg.height, msg.width)
    if msg.is_bigendian and itemsize > 1:
        arr = arr.byteswap()
    if msg.encoding == "bgr8":
        arr = arr[:, :, ::-1]
    return np.ascontiguousarray(arr)


def depth_to_msg(depth_m: np.ndarray, header=None) -> Image:
    """16UC1 depth in millimetres (0 = no return), the RealSense driver's encoding, from metres."""
    mm = np.clip(np.nan_to_num(depth_m, nan=0.0) * 1000.0, 0.0, 65535.0).round().astype(np.uint16)
    return to_msg(mm, "16UC1", header)


def camera_info(k: np.ndarray, width: int, height: int, header=None):
    """sensor_msgs/CameraInfo of an undistorted pinhole camera with intrinsics ``k`` (3x3)."""
    from sensor_msgs.msg import CameraInfo

    msg = CameraInfo(width=int(width), height=int(height), distortion_model="plumb_bob")
    if header is not None:
        msg.header = header
    fx, fy, cx, cy = float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2])
    msg.d = [0.0] * 5
    msg.k = [fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0]
    msg.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    msg.p = [fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0]
    return msg
