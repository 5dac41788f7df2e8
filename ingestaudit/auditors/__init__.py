"""Auditors: one module per stage; each turns (truth, stage output) into `Score`s."""
