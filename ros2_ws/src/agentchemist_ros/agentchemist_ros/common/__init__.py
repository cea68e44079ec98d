"""Plumbing shared by the node modules (QoS, time, parameters, message conversions)."""
