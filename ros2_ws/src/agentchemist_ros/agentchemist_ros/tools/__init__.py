"""Tools built on the nodes (not nodes themselves): the in-process graph, the demo, the scenario runner
and the bag recorder/player with its CLI. Nodes (*_node.py) and common/ stay one level up."""
