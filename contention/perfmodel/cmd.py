"""``contention-train``: train, evaluate and use the placement model.

::

    contention-train --from-store URL --out MODEL
    contention-train --from-sim SCENARIO --out MODEL
    contention-train evaluate --model MODEL (--from-sim S | --from-store URL) [--json]
    contention-train retrain --from-store URL --model MODEL [--since S] [--json]
    contention-train history --model MODEL [--json]
    contention-train advise --model MODEL --profile mpki=20,mf=0.8,ipc=0.6 \\
        --vcpus 8 --target 0.9 [--nodes 4 --cores-per-node 12 \\
        --threads-per-core 2 | --topology HOST.json] [--json]

Training prints the per-workload leave-one-out mean absolute error and
writes it into the model file. ``retrain`` is the scheduled form of
training from the store: it first scores the model in service on the
telemetry stored since it was trained (its live error), then replaces it,
and appends both to the model's history (:mod:`contention.perfmodel.drift`),
which ``history`` prints. Exit status: 0 done, 1 bad input or a model kept
because the history cannot train one (message on stderr), 2 usage.
"""

import argparse
import dataclasses
import functools
import json
import os
import sys
import time


from contention.perfmodel import advise as advise_mod
from contention.perfmodel import datasets
from contention.perfmodel import drift
from contention.perfmodel import features
from contention.perfmodel import machine
from contention.perfmodel import persist
from contention.perfmodel import train as train_mod
from contention.topology import HostTopology

COMMANDS = ('train', 'evaluate', 'retrain', 'history', 'advise')


def _add_source(parser, required=True):
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument('--from-store', metavar='URL',
                       help='SQLAlchemy URL of the telemetry store')
    group.add_argument('--from-sim', metavar='SCENARIO',
                       help='simulator scenario: shipped name or YAML path')
    parser.add_argument('--since', type=float, default=None,
                        help='only store history newer than this many '
                             'seconds')
    parser.add_argument('--samples-per-workload', type=int,
                        default=train_mod.DEFAULT_SAMPLES,
                        help='--from-sim: random landings per workload')
    parser.add_argument('--seed', type=int, default=0,
                        help='--from-sim: seed of the random landings')
    parser.add_argument('--library', action='append', default=[],
                        metavar='NAME',
                        help='--from-sim: also train on this shipped '
                             'profile library of the simulator (repeat, '
                             'or "all"); the cross-validated error stays '
                             'about the scenario\'s own workloads')


def _add_forest(parser):
    """The training options ``train`` and ``retrain`` share."""
    parser.add_argument('--estimators', type=int,
                        default=train_mod.DEFAULT_ESTIMATORS,
                        help='trees of the interference forest')
    parser.add_argument('--min-samples', type=int, default=3,
                        help='drop store workloads with fewer samples')


def build_parser():
    parser = argparse.ArgumentParser(
        prog='contention-train',
        description='Train, evaluate and use the placement model.')
    sub = parser.add_subparsers(dest='command')
    train = sub.add_parser('train', help='train a model (the default)')
    _add_source(train)
    train.add_argument('--out', required=True, metavar='MODEL',
                       help='file to write the model to (the weigher\'s '
                            '[contention] model_path)')
    train.add_argument('--synthetic', type=int,
                       default=train_mod.DEFAULT_SYNTHETIC, metavar='N',
                       help='--from-sim: seeded synthetic simulator '
                            'profiles added as training subjects (never '
                            'held out; 0 = none; default %(default)s)')
    train.add_argument('--copies-samples', type=int, default=0,
                       metavar='N',
                       help='--from-sim: N more landings of each workload '
                            'beside 1-3 copies of one workload, for a '
                            'model the numa_aware_swap strategy values '
                            'socket mixes with ([watcher_strategies.'
                            'numa_aware_swap] mix_model; 0 = none; '
                            'default %(default)s)')
    _add_forest(train)
    train.add_argument('--pv-estimators', type=int,
                       default=train_mod.DEFAULT_PV_ESTIMATORS,
                       help='trees of the placement-vector forest')
    train.add_argument('--json', action='store_true',
                       help='print the cross-validation result as JSON')
    ev = sub.add_parser('evaluate', help='error of a model on a data set')
    ev.add_argument('--model', required=True,
                    help='model file written by contention-train train')
    _add_source(ev)
    ev.add_argument('--json', action='store_true',
                    help='print the errors as JSON')
    ret = sub.add_parser(
        'retrain', help='replace a model with one trained on the store\'s '
                        'history as it is now, recording the old model\'s '
                        'error on the telemetry since it was trained')
    ret.add_argument('--from-store', required=True, metavar='URL',
                     help='SQLAlchemy URL of the telemetry store')
    ret.add_argument('--model', required=True,
                     help='the model file in service (the weigher\'s '
                          '[contention] model_path); replaced atomically')
    ret.add_argument('--history', metavar='FILE', default=None,
                     help='history of the runs (default: MODEL%s)'
                          % drift.HISTORY_SUFFIX)
    ret.add_argument('--since', type=float, default=None,
                     help='train on store history newer than this many '
                          'seconds only (default: all the store keeps)')
    _add_forest(ret)
    ret.add_argument('--force', action='store_true',
                     help='replace the model even where a model trained on '
                          'the older history did worse than it on the '
                          'newest (kept otherwise)')
    ret.add_argument('--json', action='store_true',
                     help='print the run\'s record as JSON')
    hist = sub.add_parser('history', help='the retraining runs of a model '
                                          'and the drift of its error')
    hist.add_argument('--model', required=True, help='the model file')
    hist.add_argument('--history', metavar='FILE', default=None,
                      help='default: MODEL%s' % drift.HISTORY_SUFFIX)
    hist.add_argument('--json', action='store_true',
                      help='print the records as JSON')
    adv = sub.add_parser('advise', help='hw:numa_nodes for a profile '
                                        '(paper section 7)')
    adv.add_argument('--model', required=True,
                     help='model file written by contention-train train')
    adv.add_argument('--profile', required=True,
                     help='mpki=<L3 MPKI>,mf=<memory factor>,ipc=<IPC>'
                          '[,cpu_util=<0-1>][,latency=1]'
                          '[,mf_small_llc=<MF with 1/4 of the LLC>]')
    adv.add_argument('--vcpus', type=int, required=True,
                     help='vCPUs of the flavor')
    adv.add_argument('--memory-mib', type=int, default=4096,
                     help='RAM of the flavor (default %(default)s)')
    adv.add_argument('--target', type=float, default=0.9,
                     help='lowest predicted normalised performance every '
                          'instance must keep (default %(default)s)')
    adv.add_argument('--topology', metavar='FILE',
                     help='HostTopology JSON (e.g. from a host report)')
    adv.add_argument('--nodes', type=int, default=2,
                     help='without --topology: NUMA nodes of the host '
                          '(default %(default)s)')
    adv.add_argument('--cores-per-node', type=int, default=16,
                     help='without --topology: cores per NUMA node '
                          '(default %(default)s)')
    adv.add_argument('--threads-per-core', type=int, default=2,
                     help='without --topology: hardware threads per core '
                          '(default %(default)s)')
    adv.add_argument('--json', action='store_true',
                     help='print the options and the advice as JSON')
    return parser


def _interference_data(args):
    """(Dataset, simulator parts or None) from the chosen source."""
    if args.from_sim:
        # the composition root: the one place perfmodel calls the
        # simulator (which sits above it)
        from contention.sim import training
        return training.sim_dataset(
            args.from_sim, samples_per_workload=args.samples_per_workload,
            seed=args.seed, libraries=tuple(args.library),
            # evaluate scores the named workloads only
            synthetic=getattr(args, 'synthetic', 0),
            copies_samples=getattr(args, 'copies_samples', 0))
    from contention import store as api
    store = api.open_store(args.from_store)
    try:
        since = None if args.since is None else time.time() - args.since
        data = datasets.from_store(store, since=since,
                                   min_samples=getattr(args, 'min_samples',
                                                       1))
    finally:
        store.dispose()
    return data, None


def train(args, out):
    data, sim = _interference_data(args)
    bundle, report = train_mod.train_bundle(
        data, sim, estimators=args.estimators,
        pv_estimators=args.pv_estimators)
    persist.save(bundle, args.out)
    result = dict(report, model=args.out)
    summary = report['summary']
    pv = bundle.placement_vector
    if args.json:
        out.write(json.dumps(result, indent=2, sort_keys=True) + '\n')
    else:
        if args.from_sim:
            out.write('[simulated] ')
        out.write('trained on %(samples)d samples of %(workloads)d '
                  'workloads from %(source)s\n' % summary)
        out.write('leave-one-workload-out MAE: %.4f (performance %.4f, '
                  'co-runner slowdown %.4f)\n'
                  % (report['cv_mae'], report['cv_per_output']['performance'],
                     report['cv_per_output']['corunner_slowdown']))
        if pv is not None:
            out.write('placement-vector model: inputs %s, MAE %.4f\n'
                      % ([pv.placements_[i] for i in pv.inputs_],
                         pv.cv_.mae))
        out.write('wrote %s\n' % args.out)
    return 0


def evaluate(args, out):
    bundle = persist.load(args.model)
    data, _ = _interference_data(args)
    if not len(data.X):
        raise ValueError('%s holds no usable samples' % data.source)
    result = dict(drift.score(bundle.interference, data),
                  model=args.model, source=data.source,
                  trained_cv_mae=bundle.cv_mae,
                  simulated=bool(args.from_sim))
    if args.json:
        out.write(json.dumps(result, indent=2, sort_keys=True) + '\n')
    else:
        if args.from_sim:
            out.write('[simulated] ')
        out.write('MAE %.4f on %d samples from %s (cross-validated at '
                  'training: %s)\n' % (result['mae'], result['samples'],
                                       data.source, bundle.cv_mae))
        out.write('the model abstains on %d of them (default limits of '
                  'contention.perfmodel.confidence); MAE on the rest: %s\n'
                  % (result['abstained'],
                     'n/a' if result['mae_where_sure'] is None
                     else '%.4f' % result['mae_where_sure']))
    return 0


def _in_service(path):
    """(bundle or None, why none) of the model file at ``path``."""
    if not os.path.exists(path):
        return None, 'no model at %s' % path
    try:
        return persist.load(path), None
    except persist.ModelFileError as exc:
        return None, str(exc)


def retrain(args, out):
    from contention import store as api
    now = time.time()
    history = args.history or drift.history_path(args.model)
    previous, why = _in_service(args.model)
    trained_at = previous.summary.get('trained_at') if previous else None
    store = api.open_store(args.from_store)
    try:
        since = None if args.since is None else now - args.since
        reports = store.training_samples(since=since)
    finally:
        store.dispose()
    data = datasets.from_reports(reports, min_samples=args.min_samples)
    live = {'samples': 0, 'mae': None, 'abstained': 0}
    if previous is not None and trained_at is not None:
        live = drift.score(previous.interference, datasets.from_reports(
            reports, after=trained_at))
    record = drift.Retraining(
        at=now, source=data.source, samples=int(len(data.X)),
        workloads=len(data.workloads),
        previous_trained_at=trained_at,
        previous_cv_mae=previous.cv_mae if previous else None,
        live_samples=live['samples'], live_mae=live['mae'],
        live_abstained=live['abstained'])
    record = _challenge(args, reports, previous, trained_at, record)
    if record.reason is None:
        try:
            bundle, report = train_mod.train_bundle(
                data, estimators=args.estimators)
        except ValueError as exc:
            record = dataclasses.replace(
                record, reason='%s; the model in service is kept' % exc)
            drift.append(history, record)
            raise ValueError(record.reason)
        persist.save(bundle, args.model)
        record = dataclasses.replace(record, cv_mae=report['cv_mae'],
                                     replaced=True)
    drift.append(history, record)
    if args.json:
        out.write(json.dumps(dataclasses.asdict(record), indent=2,
                             sort_keys=True) + '\n')
        return 0
    if record.live_mae is None:
        out.write('no telemetry scored since the model in service was '
                  'trained (%s)\n' % (why or 'no stored samples since'))
    else:
        out.write('model in service: MAE %.4f on %d samples stored since '
                  'it was trained (%s at training%s); abstained on %d\n'
                  % (record.live_mae, record.live_samples,
                     '%.4f' % record.previous_cv_mae
                     if record.previous_cv_mae is not None else 'no error',
                     ', drift %.1fx' % record.drift
                     if record.drift is not None else '',
                     record.live_abstained))
    if record.holdout_samples:
        out.write('on the newest %d samples: model in service MAE %.4f, a '
                  'model trained on the history before them %.4f\n'
                  % (record.holdout_samples, record.holdout_mae_in_service,
                     record.holdout_mae_challenger))
    if not record.replaced:
        out.write('%s (history %s)\n' % (record.reason, history))
        return 0
    out.write('retrained on %d samples of %d workloads: leave-one-workload-'
              'out MAE %.4f\nwrote %s (history %s)\n'
              % (record.samples, record.workloads, record.cv_mae,
                 args.model, history))
    return 0


def _challenge(args, reports, previous, trained_at, record):
    """``record`` with the comparison on the newest history.

    And a reason to keep the model in service if a challenger did worse
    there (:func:`contention.perfmodel.drift.challenge`); ``--force``
    replaces the model whatever the comparison says.
    """
    start = drift.holdout_start([r.timestamp for r in reports], trained_at)
    if previous is None or start is None:
        return record
    held = datasets.from_reports(reports, after=start)
    train = datasets.from_reports(reports, before=start,
                                  min_samples=args.min_samples)
    if not len(held.X) or len(train.workloads) < 2:
        return record
    old, new = drift.challenge(previous.interference, train, held,
                               args.estimators)
    record = dataclasses.replace(record, holdout_samples=int(len(held.X)),
                                 holdout_mae_in_service=old,
                                 holdout_mae_challenger=new)
    if drift.worse(old, new) and not args.force:
        record = dataclasses.replace(record, reason=(
            'a model trained on the history before the newest %d samples '
            'did worse on them than the model in service (MAE %.4f vs '
            '%.4f, more than %d %% worse): the model in service is kept '
            '(--force replaces it)' % (len(held.X), new, old,
                                       round(drift.TOLERANCE * 100))))
    return record


def history(args, out, err=None):
    path = args.history or drift.history_path(args.model)
    records, problems = drift.read(path)
    for problem in problems:
        (err or sys.stderr).write('contention-train history: skipped %s\n'
                                  % problem)
    if args.json:
        out.write(json.dumps([dict(dataclasses.asdict(r), drift=r.drift)
                              for r in records], indent=2,
                             sort_keys=True) + '\n')
    elif not records:
        out.write('no retraining recorded in %s\n' % path)
    else:
        out.write('\n'.join(drift.table(records)) + '\n')
    return 0


def _topology(args):
    if args.topology:
        with open(args.topology) as f:
            data = json.load(f)
        return HostTopology.from_dict(data.get('topology', data))
    return machine.regular_topology(
        nodes=args.nodes, cores_per_node=args.cores_per_node,
        threads_per_core=args.threads_per_core)


def advise(args, out):
    bundle = persist.load(args.model)
    profile = features.parse_profile(args.profile, vcpus=args.vcpus,
                                     memory_mib=args.memory_mib,
                                     source='cli')
    result = advise_mod.advise(bundle.interference, profile, _topology(args),
                               target=args.target)
    if args.json:
        out.write(json.dumps(result.to_dict(), indent=2, sort_keys=True)
                  + '\n')
        return 0
    out.write('flavor extra spec  instances/host  worst perf  alone\n')
    for o in result.options:
        mark = ' *' if o is result.best else ''
        out.write('%-17s  %14d  %10.3f  %5.3f%s\n'
                  % ('hw:numa_nodes=%d' % o.numa_nodes, o.instances,
                     o.performance, o.alone, mark))
    if result.best is None:
        out.write('no hw:numa_nodes value meets the target %.2f\n'
                  % args.target)
    else:
        out.write('recommended (*): openstack flavor set --property '
                  'hw:numa_nodes=%d FLAVOR (%d instances per host at '
                  '>= %.2f)\n' % (result.best.numa_nodes,
                                  result.best.instances, args.target))
    return 0


def main(argv=None, out=None, err=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    out = out or sys.stdout
    err = err or sys.stderr
    if not argv or argv[0] not in COMMANDS + ('-h', '--help'):
        argv.insert(0, 'train')
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = {'train': train, 'evaluate': evaluate, 'retrain': retrain,
               'history': functools.partial(history, err=err),
               'advise': advise}
    try:
        return handler[args.command](args, out)
    except (ValueError, OSError) as exc:
        err.write('contention-train %s: %s\n' % (args.command, exc))
        return 1


if __name__ == '__main__':
    sys.exit(main())
