"""AgentChemist core: the ROS-agnostic library under the AgentChemist ROS 2 node graph.

Nothing in this package imports rclpy; time is always passed in as `now` (seconds).
"""
__version__ = "0.1.0"
