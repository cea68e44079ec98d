"""Perception: turning raw sensor streams (contact audio, pH, images) into events and states."""
