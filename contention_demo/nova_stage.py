"""Stage 3, in a child process: Nova's weigher handler places new instances.

Nova and Watcher cannot share one Python process (both register ``host``
on oslo.config's global ``CONF``; see ``tests/nova/__init__.py``), so the
demo runs this module as ``python -m contention_demo.nova_stage IN OUT``
with JSON files in and out.

For each request, in order: the hosts with room for it (vCPUs and RAM
within the allocation ratios; Nova's placement service does this check in
a cloud) are weighed by Nova's own
``nova.scheduler.weights.HostWeightHandler`` with Nova's default weighers
(``nova.scheduler.weights.all_weighers``) plus
``nova_filters.ContentionWeigher``; the best host wins and Nova's own
``HostState.consume_from_request`` charges the instance to it, as the
scheduler does between the requests of one batch. Host states are real
``nova.scheduler.host_manager.HostState`` objects built from the emulated
hosts; the weigher reads the demo's store and model as it would in
nova-scheduler.
"""

import json
import logging
import sys
import warnings


def _setup(conf_values):
    import nova.conf
    from nova import objects
    objects.register_all()
    conf = nova.conf.CONF
    conf([], project='nova', default_config_files=[])
    from nova_filters import opts
    opts.register_opts(conf)
    for name, value in conf_values.items():
        conf.set_override(name, value, group='contention')
    return conf


def _numa_topology(objects, cells):
    return objects.NUMATopology(cells=[objects.NUMACell(
        id=c['id'], cpuset=set(c['cpus']), pcpuset=set(),
        memory=c['memory_mb'], cpu_usage=c['cpu_usage'],
        memory_usage=c['memory_usage'], pinned_cpus=set(),
        mempages=[objects.NUMAPagesTopology(
            size_kb=4, total=c['memory_mb'] * 256, used=0, reserved=0)],
        siblings=[{cpu} for cpu in sorted(c['cpus'])], socket=c['socket'])
        for c in cells])


def host_states(hosts):
    """Nova HostState objects for the emulated hosts."""
    from nova.scheduler import host_manager
    from nova import objects
    states = []
    for h in hosts:
        hs = host_manager.HostState(h['name'], h['name'], 'cell1')
        hs.total_usable_ram_mb = h['memory_mb']
        hs.free_ram_mb = h['memory_mb'] - h['memory_mb_used']
        hs.total_usable_disk_gb = 1000
        hs.disk_mb_used = 0
        hs.free_disk_mb = 1000 * 1024
        hs.vcpus_total = h['vcpus_total']
        hs.vcpus_used = h['vcpus_used']
        hs.num_instances = h['num_instances']
        hs.num_io_ops = 0
        hs.cpu_allocation_ratio = h['cpu_allocation_ratio']
        hs.ram_allocation_ratio = h['ram_allocation_ratio']
        hs.disk_allocation_ratio = 1.0
        hs.numa_topology = _numa_topology(objects, h['cells'])
        hs.aggregates = []
        hs.instances = {}
        hs.failed_builds = 0
        hs.hypervisor_version = 1000000
        hs.hypervisor_type = 'QEMU'
        states.append(hs)
    return states


def request_spec(req):
    from nova import objects
    flavor = objects.Flavor(
        name=req['flavor'], vcpus=req['vcpus'], memory_mb=req['memory_mb'],
        root_gb=0, ephemeral_gb=0, swap=0, extra_specs={})
    with warnings.catch_warnings():
        # The emulated images are named by profile, not by a UUID.
        warnings.simplefilter('ignore')
        image = objects.ImageMeta(id=req['image_id'], properties=(
            objects.ImageMetaProps()))
    spec = objects.RequestSpec(
        flavor=flavor, scheduler_hints={}, instance_uuid=req['uuid'],
        image=image, numa_topology=None, num_instances=1,
        instance_group=None, ignore_hosts=None, force_hosts=None,
        force_nodes=None, pci_requests=objects.InstancePCIRequests(
            requests=[]))
    return spec


def _fits(hs, req):
    free_cpu = hs.vcpus_total * hs.cpu_allocation_ratio - hs.vcpus_used
    free_ram = (hs.total_usable_ram_mb * hs.ram_allocation_ratio
                - (hs.total_usable_ram_mb - hs.free_ram_mb))
    return free_cpu >= req['vcpus'] and free_ram >= req['memory_mb']


def place(data):
    """The placements of ``data['requests']``; see the module doc."""
    conf = _setup(data.get('contention_conf', {}))
    from nova.scheduler import weights
    import nova_filters
    from nova_filters import service
    service.reset_service()
    handler = weights.HostWeightHandler()
    defaults = [cls() for cls in handler.get_matching_classes(
        ['nova.scheduler.weights.all_weighers'])]
    ours = nova_filters.ContentionWeigher()
    weighers = defaults + [ours]
    svc = service.get_service(conf)
    model = svc.model()
    states = host_states(data['hosts'])
    result = {
        'weighers': [type(w).__module__ + '.' + type(w).__name__
                     for w in weighers],
        'model': (None if model is None else dict(
            path=conf.contention.model_path,
            source=model.summary.get('source'), cv_mae=model.cv_mae)),
        'placements': []}
    for req in data['requests']:
        spec = request_spec(req)
        candidates = [hs for hs in states if _fits(hs, req)]
        entry = {'uuid': req['uuid'], 'name': req['name'], 'host': None,
                 'weights': {}, 'contention': {}}
        ours.last_scores = {}
        if candidates:
            # (with one candidate Nova calls no weigher: no scores)
            weighed = handler.get_weighed_objects(weighers, candidates,
                                                  spec)
            entry['weights'] = {w.obj.host: w.weight for w in weighed}
            entry['contention'] = {
                h: dict(score=s.score, performance=s.performance,
                        slowdown=s.slowdown, neutral=s.neutral_reason)
                for h, s in ours.last_scores.items()}
            best = weighed[0].obj
            entry['host'] = best.host
            best.consume_from_request(spec)
        result['placements'].append(entry)
    return result


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        print('usage: python -m contention_demo.nova_stage IN.json '
              'OUT.json', file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING)
    with open(argv[0]) as f:
        data = json.load(f)
    result = place(data)
    with open(argv[1], 'w') as f:
        json.dump(result, f, indent=1, sort_keys=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
