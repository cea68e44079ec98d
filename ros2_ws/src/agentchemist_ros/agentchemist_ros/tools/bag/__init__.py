"""rosbag2-compatible record and play on rclpy (serialized pub/sub), over agentchemist.bag's pure core."""
