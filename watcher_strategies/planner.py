"""Planner ``contention_sequential``: run the actions one after another.

Each step of the swap strategies is planned on the state the previous
steps leave (Ahn et al.'s loop), so running them in parallel, as
Watcher's weight planner does for migrations of one chunk, could land two
instances on a host that only has room for one. This planner keeps the
strategy's order: every action's parent is the action before it. It
accepts any action type (no weights to configure), and writes the
strategy's summary of what it skipped and why to the action plan's
``status_message``.
"""

from oslo_log import log
from watcher import objects
from watcher.common import utils
from watcher.decision_engine.planner import weight

LOG = log.getLogger(__name__)

NAME = 'contention_sequential'


class SequentialPlanner(weight.WeightPlanner):
    """Chain the solution's actions in order."""

    @classmethod
    def get_config_opts(cls):
        return []

    def schedule(self, context, audit_id, solution):
        action_plan = self.create_action_plan(context, audit_id, solution)
        summary = getattr(solution, 'contention_summary', None)
        if summary:
            action_plan.status_message = summary[:255]
            action_plan.save()
        self._create_efficacy_indicators(
            context, action_plan.id, solution.efficacy_indicators)
        previous = None
        for action in solution.actions:
            obj = objects.Action(context, uuid=utils.generate_uuid(),
                                 parents=[previous] if previous else [],
                                 action_plan_id=action_plan.id, **action)
            obj.create()
            previous = obj.uuid
        if previous is None:
            LOG.warning('The action plan is empty')
            action_plan.state = objects.action_plan.State.SUCCEEDED
            action_plan.save()
        return action_plan
