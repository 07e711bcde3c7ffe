"""``contention-sim``: run scenarios on the simulator.

    contention-sim scenarios
    contention-sim evaluate --scenario ahn-wl1 --policy oracle
    contention-sim evaluate --scenario my.yaml --policy local --epochs 20 \\
        --seed 3 --json
    contention-sim evaluate --scenario ahn-wl1 --policy contention_weigher \\
        --policy-arg model_path=/tmp/ahn.model
    contention-sim demo [--scenario ahn-wl1] [--seed N] [--output-dir DIR]
    contention-sim generate --seed 7 --hosts 12 --occupancy 1.0 \\
        --placement worst --output /tmp/full.yaml

The core's subcommands are in :data:`SUBCOMMANDS` (name -> (help,
add_arguments, run)). Others come from the ``contention.sim.commands``
entry points, each a :class:`Subcommand`: ``demo`` (``doc/demo.md``) wires
Nova and Watcher, which the core never imports, so it is found by name
instead of imported from here. Every figure printed is simulated and
labelled so.
"""

import argparse
import collections
from importlib import metadata
import json
import sys

from stevedore import extension

from contention.sim import generate
from contention.sim import scenario as scenario_mod
from contention.sim import simulator

LABEL = '[simulated]'
#: The policy every evaluation is compared with unless told otherwise:
#: nothing moves, so the gain printed is the policy's own.
BASELINE = 'none'


def policy_names():
    """The installed policies' names, without importing any of them.

    They are the ``contention.sim.policies`` entry points.
    """
    return sorted({ep.name for ep in metadata.entry_points(
        group=simulator.POLICY_NAMESPACE)})


def _add_evaluate(parser):
    parser.add_argument('--scenario', required=True,
                        help='shipped scenario name (contention-sim '
                             'scenarios) or YAML file path')
    parser.add_argument('--policy', required=True,
                        help='policy name, one of: %s'
                             % ', '.join(policy_names()))
    parser.add_argument('--baseline', default=BASELINE, metavar='POLICY',
                        help='also run the scenario under this policy, same '
                             'seed and epochs, and print the difference '
                             '(default: %(default)s, nothing moves; an empty '
                             'string skips it)')
    parser.add_argument('--epochs', type=int, default=None,
                        help='epochs to run (default: the scenario\'s)')
    parser.add_argument('--seed', type=int, default=None,
                        help='seed (default: the scenario\'s)')
    parser.add_argument('--placement', default=None,
                        choices=scenario_mod.PLACEMENTS,
                        help='initial placement overriding the scenario\'s')
    parser.add_argument('--policy-arg', action='append', default=[],
                        metavar='KEY=VALUE',
                        help='a keyword argument for the policy\'s '
                             'constructor, as a string (repeatable), e.g. '
                             'model_path=/tmp/ahn.model for '
                             'contention_weigher')
    parser.add_argument('--json', action='store_true',
                        help='print the result as JSON')


def format_result(result):
    """The human-readable report of a RunResult; every figure labelled."""
    r = result
    lines = ['%s scenario %s, policy %s, seed %d, %d epochs, initial '
             'placement %s' % (LABEL, r.scenario, r.policy, r.seed,
                               r.epochs, r.placement), '',
             '%-28s %-14s %-10s %9s %9s %11s'
             % ('vm', 'profile', 'host', 'perf mean', 'perf min',
                'degradation')]
    for vm in r.vms:
        lines.append('%-28s %-14s %-10s %9.3f %9.3f %11.3f'
                     % (vm.name[:28], vm.profile[:14], vm.host[:10],
                        vm.perf_mean, vm.perf_min, vm.degradation))
    lines += ['', 'totals %s' % LABEL,
              '  normalised performance, mean     %.3f' % r.perf_mean,
              '  normalised performance, minimum  %.3f' % r.perf_min,
              '  degradation spread (max - min)   %.3f'
              % r.degradation_spread,
              '  degradation h-spread (IQR)       %.3f'
              % r.degradation_hspread,
              '  live migrations                  %d' % r.migrations,
              '  vCPU moves                       %.0f' % r.vcpu_moves,
              '  memory moves (within hosts)      %d' % r.memory_moves,
              '  memory moved                     %.2f GiB'
              % r.memory_moved_gib,
              '  CPU quota changes                %d' % r.quota_changes,
              '  rejected actions                 %d%s' % (
                  r.rejected_actions, ' (%s)' % ', '.join(
                      '%s %d' % kv for kv in r.rejected_reasons)
                  if r.rejected_reasons else ''),
              '  arrivals with no valid host      %d' % r.no_valid_host,
              '  arrivals the filter redirected   %d' % r.filtered_arrivals,
              '  CPU utilisation                  %.3f' % r.cpu_utilisation,
              '  platform efficiency (Merlin)     %.3f'
              % r.platform_efficiency,
              '  decision wall time               %.3f s'
              % r.decision_wall_s,
              '  solver wall time                 %.3f s'
              % r.solver_wall_s]
    if r.notes:
        lines += ['', 'notes:'] + ['  ' + n for n in r.notes]
    return '\n'.join(lines)


def policy_args(pairs):
    """{key: value} from ``KEY=VALUE`` strings; ValueError if malformed."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition('=')
        if not sep or not key.strip().isidentifier():
            raise ValueError('--policy-arg %r: expected KEY=VALUE' % pair)
        params[key.strip()] = value
    return params


def _largest_fall(result, baseline):
    """(uuid, relative change) of the VM of ``result`` that fell most."""
    return simulator.largest_fall(
        {vm.uuid: vm.perf_mean for vm in result.vms},
        {vm.uuid: vm.perf_mean for vm in baseline.vms})


def format_comparison(result, baseline):
    """Lines comparing ``result`` with the same run under ``baseline``.

    With the VM that fell most against its own baseline performance
    (:func:`simulator.largest_fall`): a better mean can hide one VM made
    much worse, which issue 19's harm bound is about.
    """
    def pct(new, old):
        return '%+.1f %%' % (100.0 * (new - old) / old) if old else 'n/a'
    names = {vm.uuid: vm.name for vm in baseline.vms}
    uuid, change = _largest_fall(result, baseline)
    if uuid is None:
        worst = 'no VM in both runs'
    elif change >= 0:
        worst = 'none fell'
    else:
        worst = '%s, %+.1f %%' % (names[uuid], 100.0 * change)
    return '\n'.join([
        'against the baseline %s (policy %s, same seed and epochs):'
        % (LABEL, baseline.policy),
        '  normalised performance, mean     %.3f -> %.3f (%s)'
        % (baseline.perf_mean, result.perf_mean,
           pct(result.perf_mean, baseline.perf_mean)),
        '  normalised performance, minimum  %.3f -> %.3f (%s)'
        % (baseline.perf_min, result.perf_min,
           pct(result.perf_min, baseline.perf_min)),
        '  degradation spread (max - min)   %.3f -> %.3f'
        % (baseline.degradation_spread, result.degradation_spread),
        '  largest fall of one VM           %s' % worst])


def _run_evaluate(args):
    policy = args.policy
    params = policy_args(args.policy_arg)
    if params:
        try:
            policy = simulator.load_policy(args.policy, **params)
        except TypeError as exc:
            raise ValueError('policy %s: %s' % (args.policy, exc))
    result = simulator.run(args.scenario, policy, epochs=args.epochs,
                           seed=args.seed, placement_policy=args.placement)
    baseline = None
    if args.baseline and args.baseline != args.policy:
        baseline = simulator.run(args.scenario, args.baseline,
                                 epochs=result.epochs, seed=result.seed,
                                 placement_policy=args.placement)
    if args.json:
        data = result.to_dict()
        if baseline is not None:
            data['baseline'] = baseline.to_dict()
            uuid, change = _largest_fall(result, baseline)
            data['largest_fall'] = {'uuid': uuid, 'change': change}
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        print(format_result(result))
        if baseline is not None:
            print('\n' + format_comparison(result, baseline))
    return 0


def _add_scenarios(parser):
    """``contention-sim scenarios`` takes no arguments."""


def _run_scenarios(args):
    for name in scenario_mod.available():
        scen = scenario_mod.load(name)
        print('%-14s %s' % (name, scen.description))
    return 0


#: What a ``contention.sim.commands`` entry point names: its help line,
#: ``add_arguments(parser)`` and ``run(args) -> exit status``.
Subcommand = collections.namedtuple('Subcommand', 'help add_arguments run')

#: The core's own subcommands.
SUBCOMMANDS = {
    'evaluate': Subcommand('run a scenario under a policy and print '
                           'simulated metrics', _add_evaluate, _run_evaluate),
    'generate': Subcommand(generate.HELP, generate.add_arguments,
                           generate.run_command),
    'scenarios': Subcommand('list the shipped scenarios', _add_scenarios,
                            _run_scenarios),
}


def subcommands():
    """The core's subcommands and the installed entry points, by name."""
    found = dict(SUBCOMMANDS)
    mgr = extension.ExtensionManager('contention.sim.commands',
                                     invoke_on_load=False)
    for ext in mgr:
        found.setdefault(ext.name, Subcommand(*ext.plugin))
    return found


def build_parser(commands=None):
    parser = argparse.ArgumentParser(
        prog='contention-sim',
        description='Run contention scenarios on the simulator. Every '
                    'figure it prints is simulated.')
    sub = parser.add_subparsers(dest='command', required=True)
    for name, (text, add, _) in sorted((commands or subcommands()).items()):
        add(sub.add_parser(name, help=text, description=text))
    return parser


def main(argv=None):
    commands = subcommands()
    args = build_parser(commands).parse_args(argv)
    try:
        return commands[args.command].run(args)
    except (scenario_mod.ScenarioError, ValueError) as exc:
        print('contention-sim: error: %s' % exc, file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
