"""``contention-sim demo``: the stages, in order, each one progress line.

1. cluster: the emulated cluster of a scenario (:mod:`contention.sim`);
2. telemetry: one agent per host, the bus, the collector, the store
   (:mod:`contention_demo.telemetry`);
3. nova: new instances placed by Nova's weigher handler with
   ``ContentionWeigher`` (:mod:`contention_demo.nova_stage`, in a child
   process; the model it uses is trained here first);
4. watcher: an audit through Watcher's strategy execution and our
   planner, its plan applied to the emulated cluster
   (:mod:`contention_demo.watcher_stage`);
5. report: tables, the action plan, a PNG (:mod:`contention_demo.report`).

A failing stage stops the demo with exit status 1 and a message naming
the stage. Every figure is simulated.
"""

import dataclasses
import json
import os
import subprocess
import sys
import time
import uuid as uuidlib
import warnings

from contention import policy
from contention.sim import cmd as sim_cmd
from contention.sim import scenario as scenario_mod
from contention.sim import simulator
from contention import store as store_api
from contention_demo import report as report_mod

#: Agent cycles per telemetry round (the first gives no rates: counters
#: need two readings).
CYCLES = 3
INTERVAL_S = 10.0


class StageFailed(Exception):
    def __init__(self, stage, message):
        super().__init__('stage %s failed: %s' % (stage, message))
        self.stage = stage


def add_arguments(parser):
    parser.add_argument('--scenario', default='ahn-wl1',
                        help='shipped scenario name or YAML file '
                             '(default: ahn-wl1)')
    parser.add_argument('--seed', type=int, default=None,
                        help='seed (default: the scenario\'s); same seed, '
                             'same figures')
    parser.add_argument('--output-dir', default='demo-output',
                        help='where the store, the Watcher database, the '
                             'model, the report and the plot go '
                             '(default: ./demo-output)')
    parser.add_argument('--store', default=None, metavar='URL',
                        help='SQLAlchemy URL of the telemetry store '
                             '(default: a SQLite file in the output dir)')
    parser.add_argument('--transport-url', default=None,
                        help='oslo.messaging transport for the host '
                             'reports (default: in-process fake://; e.g. '
                             'rabbit://guest:guest@127.0.0.1:5672/)')
    parser.add_argument('--new-instances', type=int, default=4,
                        help='when the scenario has no arrivals: how many '
                             'of its instances (one per profile in turn) '
                             'arrive through Nova instead of being there '
                             'from the start, one per host in turn '
                             '(default: 4)')
    parser.add_argument('--threshold', type=float, default=None,
                        help='cache_aware_swap threshold in LLC misses/s '
                             '(default: the strategy\'s)')
    parser.add_argument('--no-plot', action='store_true',
                        help='skip the PNG plot')


def _progress(out, stage, text):
    out.write('[%s] %-9s %s\n' % (report_mod.LABEL, stage, text))
    out.flush()


def split_arrivals(scen, count, seed=None):
    """(scenario to start from, InstanceSpecs that arrive through Nova).

    A scenario with arrivals keeps its initial instances and its arrivals
    arrive. Otherwise the scenario is placed as it says (its ``placement``
    policy, with ``seed``), then ``count`` of its instances, taken one per
    host in turn (the last one placed there), are held back: the demo
    starts from that placement without them (``explicit``, every other
    instance where the scenario put it, memory included) and they arrive
    through Nova into the room they leave on several hosts.
    """
    if scen.arrivals:
        specs = []
        for a in scen.arrivals:
            for _ in range(a.count):
                specs.append(scenario_mod.InstanceSpec(
                    profile=a.profile, name='%s-arrival-%d'
                    % (a.profile, len(specs) + 1), quota=a.quota))
        return dataclasses.replace(scen, arrivals=()), specs
    full = simulator.Simulator(scen, seed=seed)
    state = full.state
    by_name = {inst.name: inst for inst in state.instances}
    held = set()
    hosts = list(range(len(state.hosts)))
    while len(held) < min(count, len(state.instances)):
        progressed = False
        for h in hosts:
            if len(held) >= count:
                break
            free = [i for i in state.on_host(h)
                    if i.movable and i.name not in held]
            if free:
                held.add(free[-1].name)
                progressed = True
        if not progressed:
            break
    remaining, arriving = [], []
    for spec in scen.instances:
        if spec.name in held:
            arriving.append(spec)
            continue
        inst = by_name[spec.name]
        remaining.append(dataclasses.replace(
            spec, host=state.hosts[inst.host].name,
            socket=state.socket_of(inst),
            memory_socket=state.socket_of(inst, inst.mem_frac)))
    return dataclasses.replace(scen, instances=tuple(remaining),
                               placement='explicit'), arriving


def train_model(scen, store, path):
    """Train the weigher's model; (path or None, note for the report).

    From the simulator (:func:`contention.sim.training.train_from_sim`
    with its quick settings) when it can, else from the demo store's
    telemetry history; if neither has two workloads, None: the weigher is
    neutral, and the report says so.
    """
    from contention.perfmodel import datasets
    from contention.perfmodel import train
    from contention.sim import training
    try:
        bundle, result = training.train_from_sim(scen, **train.QUICK)
        how = 'trained on the simulator (scenario %s)' % scen.name
    except (ValueError, OSError) as exc:
        data = datasets.from_store(store, min_samples=2)
        if len(data.workloads) < 2:
            return None, ('no model (simulator: %s; store: %d workload(s) '
                          'with samples): the weigher gives every host the '
                          'neutral score' % (exc, len(data.workloads)))
        bundle, result = train.train_bundle(data, estimators=30)
        how = ('trained on the demo store\'s telemetry history (not on '
               'the simulator: %s)' % exc)
    train.save(bundle, path)
    summary = result['summary']
    return path, ('%s: %d samples of %d workloads, leave-one-workload-out '
                  'MAE %.3f' % (how, summary['samples'],
                                summary['workloads'], result['cv_mae']))


def _nova_input(sim, requests, store_url, model_path):
    hosts = []
    view = sim.view()
    by_host = {}
    for inst in view.instances:
        by_host.setdefault(inst.host, []).append(inst)
    for h, host in enumerate(sim.state.hosts):
        m = host.model
        hv = view.hosts[h]
        insts = by_host.get(host.name, [])
        cells = []
        for node in m.topology.nodes:
            on = [i for i in insts if i.node == node.id]
            cells.append(dict(
                id=node.id, cpus=list(node.cpus),
                memory_mb=int(node.memory_mib or 0),
                cpu_usage=sum(i.vcpus for i in on),
                memory_usage=sum(i.memory_mib for i in on),
                socket=node.socket if node.socket is not None else node.id))
        hosts.append(dict(
            name=host.name, vcpus_total=hv.vcpus_total,
            vcpus_used=sum(i.vcpus for i in insts),
            memory_mb=hv.memory_mib_total,
            memory_mb_used=sum(i.memory_mib for i in insts),
            num_instances=len(insts),
            cpu_allocation_ratio=hv.cpu_allocation_ratio,
            ram_allocation_ratio=hv.ram_allocation_ratio, cells=cells))
    conf = dict(store_connection=store_url, store_cache_ttl=0,
                # the emulated cluster runs faster than the wall clock
                max_telemetry_age=3600)
    conf['model_path'] = model_path or os.devnull + '.no-model'
    return dict(hosts=hosts, requests=requests, contention_conf=conf)


def run_nova(sim, requests, store_url, model_path, workdir):
    """Run :mod:`contention_demo.nova_stage` in a child Python process."""
    data = _nova_input(sim, requests, store_url, model_path)
    path_in = os.path.join(workdir, 'nova-in.json')
    path_out = os.path.join(workdir, 'nova-out.json')
    with open(path_in, 'w') as f:
        json.dump(data, f, indent=1)
    env = dict(os.environ, PYTHONWARNINGS='ignore')
    proc = subprocess.run(
        [sys.executable, '-m', 'contention_demo.nova_stage', path_in,
         path_out], capture_output=True, text=True, env=env)
    if proc.returncode:
        raise RuntimeError('the Nova child process exited with %d: %s'
                           % (proc.returncode, proc.stderr.strip()[-2000:]))
    with open(path_out) as f:
        return json.load(f)


class _Chosen(policy.Policy):
    """A placement policy that replays Nova's choices, in order.

    Nova's own filters already ran in the child process, so the filter
    stage is the Policy default: every candidate passes.
    """

    name = 'nova_replay'

    def __init__(self, hosts):
        self.hosts = list(hosts)

    def place(self, instance, view, candidates, rng):
        return self.hosts.pop(0) if self.hosts else None


def run(args, out=sys.stdout):
    """The demo; returns (exit status, result dict or None)."""
    start = time.perf_counter()
    outdir = os.path.abspath(args.output_dir)
    try:
        return 0, _run(args, outdir, out, start)
    except StageFailed as exc:
        out.flush()
        print('contention-sim demo: %s' % exc, file=sys.stderr)
        return 1, None


def _stage(name, func, *a, **kw):
    try:
        return func(*a, **kw)
    except StageFailed:
        raise
    except Exception as exc:
        raise StageFailed(name, '%s: %s' % (type(exc).__name__, exc)) \
            from exc


def _run(args, outdir, out, start):
    # -- 1. cluster -------------------------------------------------------
    def cluster():
        os.makedirs(outdir, exist_ok=True)
        scen = scenario_mod.load(args.scenario)
        base, arriving = split_arrivals(scen, args.new_instances,
                                        args.seed)
        # arrivals in epoch 1: the simulator places them through a policy
        base = dataclasses.replace(base, arrivals=tuple(
            scenario_mod.Arrival(epoch=1, profile=s.profile, quota=s.quota)
            for s in arriving))
        sim = simulator.Simulator(base, seed=args.seed)
        return scen, sim, arriving
    scen, sim, arriving = _stage('cluster', cluster)
    hosts = sim.state.hosts
    _progress(out, 'cluster', 'scenario %s (seed %d): %d hosts, %d '
              'instances placed "%s", %d to arrive through Nova'
              % (scen.name, sim.seed, len(hosts), len(sim.state.instances),
                 scen.placement, len(arriving)))

    # -- 2. telemetry -----------------------------------------------------
    # (imported here: oslo.messaging's imports warn, main() quiets them)
    from contention_demo import telemetry
    store_url = args.store or 'sqlite:///%s' % os.path.join(
        outdir, 'telemetry.sqlite')
    lead = 3 * CYCLES * INTERVAL_S + 2 * scen.epoch_s * 4

    def telemetry_up():
        if not args.store:
            path = os.path.join(outdir, 'telemetry.sqlite')
            if os.path.exists(path):
                os.remove(path)
        store = store_api.open_store(store_url)
        store.upgrade()
        clock = telemetry.EmulatedClock(lead)
        tel = telemetry.Telemetry(sim, store, clock, INTERVAL_S,
                                  args.transport_url)
        tel.start()
        tel.run(CYCLES)
        return store, clock, tel
    store, clock, tel = _stage('telemetry', telemetry_up)
    try:
        return _after_telemetry(args, outdir, out, start, scen, sim,
                                arriving, store, store_url, clock, tel)
    finally:
        try:
            tel.stop()
        finally:
            store.dispose()


def _after_telemetry(args, outdir, out, start, scen, sim, arriving, store,
                     store_url, clock, tel):
    from contention_demo import telemetry
    rejected = tel.rejected()
    # Before placement: the report's total also counts the cycles run
    # after the placement and after the plan, so this line says "so far".
    _progress(out, 'telemetry', '%d agents (sim source, real collection '
              'loop) -> %s -> collector -> store %s: %d reports stored so '
              'far (%d collection cycles; more follow after placement and '
              'after the plan)%s'
              % (len(tel.agents), telemetry.masked(tel.transport_url),
                 _safe_url(store_url), tel.stored(), CYCLES,
                 ', rejected %s' % rejected if rejected else ''))

    # -- 3. nova ----------------------------------------------------------
    def nova():
        model_path, note = train_model(
            scen, store, os.path.join(outdir, 'model.skops'))
        requests = []
        for i, spec in enumerate(arriving):
            # the name the simulator gives the i-th arrival
            name = '%s-arrival-%d' % (spec.profile, i + 1)
            prof = scen.profiles[spec.profile]
            requests.append(dict(
                uuid=str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, name)),
                name=name, vcpus=prof.vcpus, memory_mb=int(prof.memory_mib),
                flavor=spec.profile, image_id=spec.profile))
        result = run_nova(sim, requests, store_url, model_path, outdir)
        result['model_note'] = note
        return result
    if arriving:
        nova_result = _stage('nova', nova)
    else:
        nova_result = dict(placements=[], weighers=[], model=None,
                           model_note='no new instances')

    def land():
        sim.step()   # epoch 0: the cluster before the arrivals
        names = [p['host'] for p in nova_result['placements']]
        before = {i.uuid for i in sim.state.instances}
        sim.arrive(_Chosen(names), None)
        new = {i.name: i for i in sim.state.instances
               if i.uuid not in before}
        for p in nova_result['placements']:
            inst = new.get(p['name'])
            landed = sim.state.hosts[inst.host].name if inst else None
            if landed != p['host']:
                raise RuntimeError(
                    'Nova put %s on %s but the emulated cluster %s'
                    % (p['name'], p['host'] or 'no host',
                       'started it on %s' % landed if landed
                       else 'could not start it'))
            p['sim_uuid'] = inst.uuid if inst else None
        clock.advance(scen.epoch_s)
        tel.run(CYCLES)
    _stage('nova', land)
    placed = ', '.join('%s -> %s' % (p['name'], p['host'] or 'NO HOST')
                       for p in nova_result['placements'])
    if not arriving:
        _progress(out, 'nova', 'no new instances: nothing for Nova to place')
    else:
        _progress(out, 'nova', 'HostWeightHandler with %d weighers (Nova\'s '
                  'defaults + ContentionWeigher; %s): %s'
                  % (len(nova_result['weighers']),
                     'model loaded' if nova_result['model'] else
                     'NO MODEL, weigher neutral', placed))

    # -- 4. watcher -------------------------------------------------------
    before_perf = sim.step()
    clock.advance(scen.epoch_s)
    before_view = sim.view()
    tel.run(CYCLES)

    def watcher():
        from contention_demo import watcher_stage
        watcher_stage.setup('sqlite:///%s' % os.path.join(
            outdir, 'watcher.sqlite'), store_url)
        params = {}
        if args.threshold is not None:
            params['threshold'] = args.threshold
        plan, actions, indicators, strategy = watcher_stage.audit(
            sim.view(), clock, params)
        sim_plan = watcher_stage.to_plan(actions, {
            host.name: {cpu.id: cpu.socket
                        for cpu in host.model.topology.cpus}
            for host in sim.state.hosts})
        applied = sim.apply(sim_plan)
        return plan, actions, indicators, sim_plan, applied
    wpath = os.path.join(outdir, 'watcher.sqlite')
    if os.path.exists(wpath):
        os.remove(wpath)
    plan, actions, indicators, sim_plan, applied = _stage('watcher', watcher)
    # Run epochs until the migrations are done; the last one is "after".
    epochs = 0
    after_perf = None
    while True:
        after_perf = sim.step()
        clock.advance(scen.epoch_s)
        epochs += 1
        if not sim.running or epochs >= 20:
            break
    if sim.running:
        after_perf = sim.step()
        epochs += 1
    after_view = sim.view()
    _progress(out, 'watcher', 'audit goal contention_reduction, strategy '
              'cache_aware_swap, planner contention_sequential: %d '
              'action(s), %d applied, %d rejected; %d epoch(s) run'
              % (len(actions), len(applied.applied), len(applied.rejected),
                 epochs))

    # -- 5. report --------------------------------------------------------
    def write_report():
        result = report_mod.build_result(
            scen=scen, seed=sim.seed, before_view=before_view,
            after_view=after_view, before_perf=before_perf,
            after_perf=after_perf, plan=plan, actions=actions,
            indicators=indicators, applied=applied, nova=nova_result,
            names={i.uuid: i.name for i in sim.state.instances},
            profiles={i.uuid: i.profile.name for i in sim.state.instances},
            telemetry=dict(transport=telemetry.masked(tel.transport_url),
                           store=_safe_url(store_url),
                           reports=tel.stored(),
                           agents=len(tel.agents)))
        text = report_mod.format_report(result)
        with open(os.path.join(outdir, 'report.txt'), 'w') as f:
            f.write(text)
        with open(os.path.join(outdir, 'result.json'), 'w') as f:
            json.dump(result, f, indent=1, sort_keys=True)
        png = None
        if not args.no_plot:
            try:
                import matplotlib  # noqa: F401
            except ImportError:
                raise RuntimeError('the plot needs matplotlib: install the '
                                   '"plot" extra (pip install '
                                   'contention-aware-placement[plot]) or '
                                   'pass --no-plot') from None
            png = report_mod.plot(result, os.path.join(outdir, 'demo.png'))
        return result, text, png
    result, text, png = _stage('report', write_report)
    out.write('\n' + text + '\n')
    _progress(out, 'report', 'wrote %s%s (%.0f s)' % (
        os.path.join(outdir, 'report.txt'),
        ' and %s' % png if png else '', time.perf_counter() - start))
    return result


def _safe_url(url):
    try:
        import sqlalchemy as sa
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return '(unparsable URL)'


def _quiet():
    """Hide deprecation notices of Nova, Watcher and their libraries.

    They are for those projects' developers, not for someone watching the
    demo. (A filter is not enough: importing Watcher's clients module
    calls ``warnings.simplefilter("once")``, which takes precedence.)
    """
    show = warnings.showwarning
    if getattr(show, 'contention_demo', False):
        return

    def quiet(message, category, *args, **kwargs):
        if issubclass(category, DeprecationWarning) or \
                'Eventlet is deprecated' in str(message):
            return
        show(message, category, *args, **kwargs)
    quiet.contention_demo = True
    warnings.showwarning = quiet


def main(args):
    """Entry point of ``contention-sim demo``."""
    _quiet()
    status, _ = run(args)
    return status


#: ``contention-sim demo``, found through the ``contention.sim.commands``
#: entry point so that the core never imports this package.
COMMAND = sim_cmd.Subcommand(
    'the whole system on an emulated cluster: agents, bus, collector, '
    'store, Nova weigher, Watcher audit, report', add_arguments, main)
