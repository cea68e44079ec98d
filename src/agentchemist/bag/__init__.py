"""Rosbag2 bags without ROS: inspect, read, write, cut, and the rules of recording and playback.

Built on the pure-Python `rosbags` library (sqlite3 and MCAP storage, what `ros2 bag record` writes);
the ROS package's recorder and player (agentchemist_ros.tools.bag) only move serialized bytes between these
classes and rclpy.

- :class:`BagReader` opens a bag folder or storage file; :meth:`BagReader.info` gives a
  :class:`BagInfo` (:func:`format_info` prints it like `ros2 bag info`); messages come in time order;
  damage is contained and reported as :class:`BagProblem` entries naming the file.
- :class:`BagWriter` writes MCAP or sqlite3, split by size, with offered QoS and embedded definitions.
- :func:`copy_bag` cuts topics and a time window out of a bag.
- :func:`select_topics` turns names, patterns and presets (sensors, agents, all) into a selection.
- :mod:`qos`: rosbag2's offered_qos_profiles format and the record/play adaptation rules.
- :class:`PlaybackOptions`, :class:`Schedule`, :func:`clock_steps`: playback timing.
"""
from agentchemist.bag.convert import copy_bag
from agentchemist.bag.errors import (BagCorruptError, BagError, BagExistsError, BagMetadataError, BagNotFoundError,
                                     BagOptionError, BagProblem, QosError, UnknownMessageTypeError)
from agentchemist.bag.info import BagInfo, FileInfo, TopicInfo, format_info
from agentchemist.bag.playback import (PlaybackOptions, Schedule, clock_steps, parse_remaps, timing_errors,
                                       window)
from agentchemist.bag.presets import PRESETS, TopicSelection, select_topics
from agentchemist.bag.qos import (QosProfile, QosTime, dump_offered_qos, parse_offered_qos, playback_profile,
                                  subscription_profile)
from agentchemist.bag.reader import BagReader, discover_storage_files
from agentchemist.bag.storage import BagMessage
from agentchemist.bag.typesys import MessageTypes, share_dirs_from_env
from agentchemist.bag.writer import BagWriter, WriterOptions, WriterStats

__all__ = [
    "BagCorruptError", "BagError", "BagExistsError", "BagInfo", "BagMessage", "BagMetadataError",
    "BagNotFoundError", "BagOptionError", "BagProblem", "BagReader", "BagWriter", "FileInfo", "MessageTypes",
    "PRESETS", "PlaybackOptions", "QosError", "QosProfile", "QosTime", "Schedule", "TopicInfo", "TopicSelection",
    "UnknownMessageTypeError", "WriterOptions", "WriterStats", "clock_steps", "copy_bag", "discover_storage_files",
    "dump_offered_qos", "format_info", "parse_offered_qos", "parse_remaps", "playback_profile", "select_topics",
    "share_dirs_from_env", "subscription_profile", "timing_errors", "window",
]
