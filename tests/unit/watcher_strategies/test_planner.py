"""The contention_sequential planner in Watcher's database test base."""

import watcher.tests.unit  # noqa: F401  (must precede other watcher imports)

from unittest import mock

from watcher import objects
from watcher.common import utils
from watcher.decision_engine.solution import default as dsol
from watcher.tests.unit.db import base
from watcher.tests.unit.db import utils as db_utils

from watcher_strategies import planner


class TestSequentialPlanner(base.DbTestCase):

    def setUp(self):
        super().setUp()
        db_utils.create_test_goal(name='contention_reduction')
        self.strategy = db_utils.create_test_strategy(name='cache_aware_swap')
        self.audit = db_utils.create_test_audit(
            uuid=utils.generate_uuid(), strategy_id=self.strategy.id)
        self.planner = planner.SequentialPlanner(mock.Mock())

    def _solution(self, n):
        solution = dsol.DefaultSolution(goal=mock.Mock(),
                                        strategy=self.strategy)
        kinds = ['contention_repin', 'contention_swap', 'migrate',
                 'contention_swap']
        for i in range(n):
            solution.add_action(action_type=kinds[i % len(kinds)],
                                resource_id=utils.generate_uuid(),
                                input_parameters={'step': i})
        solution.contention_summary = '%d action(s); skipped: 2 locked' % n
        return solution

    def test_actions_form_one_chain_in_order(self):
        plan = self.planner.schedule(self.context, self.audit.id,
                                     self._solution(4))
        actions = objects.Action.list(
            self.context, filters={'action_plan_id': plan.id})
        self.assertEqual(4, len(actions))
        by_uuid = {a.uuid: a for a in actions}
        roots = [a for a in actions if not a.parents]
        self.assertEqual(1, len(roots))
        order = [roots[0]]
        children = {a.parents[0]: a for a in actions if a.parents}
        while order[-1].uuid in children:
            order.append(children[order[-1].uuid])
        self.assertEqual(4, len(order))
        self.assertEqual([0, 1, 2, 3],
                         [a.input_parameters['step'] for a in order])
        self.assertEqual(['contention_repin', 'contention_swap', 'migrate',
                          'contention_swap'],
                         [a.action_type for a in order])
        for action in actions:
            self.assertLessEqual(len(action.parents), 1)
            for parent in action.parents:
                self.assertIn(parent, by_uuid)
        plan = objects.ActionPlan.get_by_id(self.context, plan.id)
        self.assertEqual('4 action(s); skipped: 2 locked',
                         plan.status_message)
        self.assertEqual(objects.action_plan.State.RECOMMENDED, plan.state)

    def test_empty_plan_succeeds_with_its_reason(self):
        plan = self.planner.schedule(self.context, self.audit.id,
                                     self._solution(0))
        plan = objects.ActionPlan.get_by_id(self.context, plan.id)
        self.assertEqual(objects.action_plan.State.SUCCEEDED, plan.state)
        self.assertIn('0 action(s)', plan.status_message)
