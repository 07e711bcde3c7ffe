"""Goal ``contention_reduction`` and its efficacy specification.

The indicators are what an operator needs to judge an action plan before
starting it (Horizon and ``openstack optimize actionplan show`` list
them): how many instances were audited, how many migrations, swaps and
re-pins the plan runs, how uneven the per-socket LLC misses are before and
after (coefficient of variation: standard deviation / mean over every
socket of the enabled, measured hosts), the predicted gain, how much
memory live migration will copy, and what the plan is predicted to do to
the instances' performance: on average, and to the one it treats worst
(the harm check's predictions, :func:`contention.swap.harm.
predicted_changes`). The global efficacy is the relative
reduction of that spread, in percent.
"""

from watcher.decision_engine.goal import base
from watcher.decision_engine.goal.efficacy import base as efficacy_base
from watcher.decision_engine.goal.efficacy import indicators
from watcher.decision_engine.solution import efficacy

NAME = 'contention_reduction'


class _Count(indicators.IndicatorSpecification):
    schema = {'type': 'integer', 'minimum': 0}


class _NonNegative(indicators.IndicatorSpecification):
    schema = {'type': 'number', 'minimum': 0}


class _Number(indicators.IndicatorSpecification):
    schema = {'type': 'number'}


class _NonPositive(indicators.IndicatorSpecification):
    schema = {'type': 'number', 'maximum': 0}


def _spec(kind, name, description, unit=None):
    """An IndicatorSpecification subclass built with no arguments.

    (Watcher's ``IndicatorSpecification.validate`` instantiates the class
    without arguments.)
    """
    def __init__(self):
        kind.__init__(self, name=name, description=description, unit=unit)
    spec_cls = type(str('Indicator_' + name), (kind,),
                    {'__init__': __init__})
    return spec_cls()


#: (kind, name, description, unit); the names are the solution's keys.
INDICATORS = (
    (_Count, 'instances_count',
     'Instances in the audit scope.', None),
    (_Count, 'instance_migrations_count',
     'Live migrations the action plan runs (two per swap).', None),
    (_Count, 'swaps_count',
     'Swaps of two instances between hosts or sockets.', None),
    (_Count, 'repins_count',
     'Instances re-pinned to another socket of their host by the agent.',
     None),
    (_NonNegative, 'llc_miss_spread_before',
     'Coefficient of variation of per-socket LLC misses/s now.', None),
    (_NonNegative, 'llc_miss_spread_after',
     'Coefficient of variation of per-socket LLC misses/s after the plan '
     '(predicted from the measured per-instance rates).', None),
    (_Number, 'predicted_gain',
     'Predicted relative reduction of the per-socket LLC-miss spread.',
     '%'),
    (_NonNegative, 'memory_to_migrate',
     'Memory that live migrations will copy.', 'GB'),
    (_Number, 'predicted_mean_performance_change',
     'Predicted change of the instances\' performance, averaged over '
     'the instances audited (the placement model\'s prediction where '
     'mix_model values the instance, else the harm check\'s estimate).',
     '%'),
    (_NonPositive, 'predicted_worst_performance_change',
     'Predicted change of the instance the plan treats worst (0 when '
     'none is predicted to fall).', '%'),
)


class ContentionReductionSpecification(efficacy_base.EfficacySpecification):
    """The indicators above and the relative spread reduction."""

    def get_indicators_specifications(self):
        return [_spec(*row) for row in INDICATORS]

    def get_global_efficacy_indicator(self, indicators_map=None):
        value = 0.0
        if indicators_map:
            before = indicators_map.get('llc_miss_spread_before') or 0.0
            after = indicators_map.get('llc_miss_spread_after') or 0.0
            if before > 0:
                value = 100.0 * (before - after) / before
        return [efficacy.Indicator(
            name='llc_miss_spread_reduction',
            description='Relative reduction of the per-socket LLC-miss '
                        'spread (coefficient of variation).',
            # Rounded here: Horizon's plan list prints the value as it is
            # stored (40.69017632140994 %).
            unit='%', value=round(value, 1))]


class ContentionReduction(base.Goal):
    """Reduce LLC, memory-bandwidth and NUMA contention between instances.

    Spread the instances' last-level-cache misses evenly over the sockets
    of the cloud (Ahn et al.), choosing the cheapest moves that hurt
    nobody (Merlin).
    """

    @classmethod
    def get_name(cls):
        return NAME

    @classmethod
    def get_display_name(cls):
        return 'Contention reduction'

    @classmethod
    def get_translatable_display_name(cls):
        return 'Contention reduction'

    @classmethod
    def get_efficacy_specification(cls):
        return ContentionReductionSpecification()
