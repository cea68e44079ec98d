"""rclpy adapters of the AgentChemist graph: one module per node, plus shared plumbing in common/.

A node module translates messages <-> core objects, declares parameters, owns timers and QoS, and
nothing else; node modules never import each other.
"""
