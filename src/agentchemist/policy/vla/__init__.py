"""The action agent's audio-visual-language-action policy (configuration / modeling / processor, LeRobot's
per-policy layout), its demonstrations (LeRobot dataset v3 layout), training and serving core."""
