"""Placing a workload's ops on an HDA's cores in time: the Stream-style scheduler."""

from traincost.schedule.plan import MODES, SchedulePlan, read_fused_groups
from traincost.schedule.scheduler import StepCost, place_ops, schedule

__all__ = ["MODES", "SchedulePlan", "StepCost", "place_ops", "read_fused_groups", "schedule"]
