"""Displays for a person watching (rviz): plain data, no ROS."""
