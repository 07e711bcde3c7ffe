"""The agent's ``emulated`` counter source: real Nova servers, emulated counters.

A cloud without the hardware counters (a CI cloud of fake-driver computes, a
demo or staging cloud) still needs host reports about *its* servers for the
weigher and the strategies to act on them. The ``sim`` source cannot give
them: it plays a scenario's own instances. This source asks Nova which
servers are on ``[agent] host`` (their UUIDs, names, flavors, images and
projects: what the ``libvirt`` source reads from Nova's domain metadata)
and emulates, for that set of servers, the counters the simulator's
contention solver computes on one host of ``[emulated] hardware`` from a
scenario's hardware classes. A live migration shows as the server leaving
one agent's list and joining the other's; the host's model is rebuilt and
its counters restart (a new ``incarnation``, so the loop's delta code
treats it as a reset, not a wrap).

Each server's workload profile is chosen by ``[emulated] profiles`` (server
name, UUID or flavor name -> profile of the scenario's library) and
``default_profile``: the operator or the test decides what each server
"runs". Every counter it reports is emulated; its status says so.

Nova is read through Keystone with the options of the ``[emulated]`` group
(keystoneauth1's usual ``auth_type``/``auth_url``/... and session
options), with an admin account: ``GET /servers/detail?all_tenants=1&
host=...`` needs one.
"""

import dataclasses
import threading

from oslo_config import cfg
from oslo_log import log as logging

from compute_agent.sources import base
from compute_agent.sources import sim as sim_source
from contention.sim import hardware
from contention.sim import scenario as scenario_mod
from contention.sim import simulator

LOG = logging.getLogger(__name__)

GROUP = 'emulated'
#: Microversion 2.47 embeds the flavor (vcpus, ram, original_name) in the
#: server, so one request describes every server.
COMPUTE_MICROVERSION = '2.47'

emulated_opts = [
    cfg.StrOpt('scenario', default='ahn-wl1',
               help='Simulator scenario whose hardware classes and profile '
                    'library the emulation uses (a shipped name, '
                    'contention-sim scenarios lists them, or a YAML path).'),
    cfg.StrOpt('hardware', default=None,
               help='Hardware class of the scenario this host emulates. '
                    'Unset: the class of the scenario\'s first host.'),
    cfg.DictOpt('profiles', default={},
                help='Workload profile per server: keys are server names, '
                     'server UUIDs or flavor names (looked up in that '
                     'order), values profile names of the scenario\'s '
                     'library, e.g. "vm-a:mcf,m1.cpu:namd".'),
    cfg.StrOpt('default_profile', default=None,
               help='Profile of servers no [emulated] profiles key names. '
                    'Unset: the scenario\'s first instance\'s profile.'),
    cfg.StrOpt('region_name', default=None,
               help='Region of the compute endpoint in the catalogue.'),
    cfg.StrOpt('interface', default='public',
               help='Endpoint interface of the compute API to use.'),
]


@dataclasses.dataclass(frozen=True)
class Server:
    """What the source needs of one Nova server."""

    uuid: str
    name: str
    flavor: str
    vcpus: int
    memory_mib: int
    image_id: str = None
    project_id: str = None


def server_from_api(data):
    """A :class:`Server` from one server of ``GET /servers/detail`` (2.47+).

    :raises ValueError: naming the field, if the server lacks one.
    """
    try:
        flavor = data['flavor']
        image = data.get('image') or {}
        return Server(uuid=data['id'], name=data['name'],
                      flavor=flavor['original_name'],
                      vcpus=int(flavor['vcpus']),
                      memory_mib=int(flavor['ram']),
                      image_id=image.get('id') if isinstance(image, dict)
                      else None,
                      project_id=data.get('tenant_id'))
    except (KeyError, TypeError) as exc:
        raise ValueError('server %s: missing field %s in Nova\'s answer'
                         % (data.get('id', '?') if isinstance(data, dict)
                            else '?', exc))


def choose_profile(server, profiles, default):
    """The profile name of ``server``: by name, UUID, flavor, else default."""
    for key in (server.name, server.uuid, server.flavor):
        if key in profiles:
            return profiles[key]
    return default


def emulated_scenario(base_scen, host, hardware, servers):
    """A one-host scenario holding ``servers`` (with their profiles).

    ``servers`` is a sequence of (Server, profile name); the simulator
    instance of each is named by the server's UUID, so its counters map
    back to it.
    """
    return dataclasses.replace(
        base_scen, name='emulated-%s' % host, hosts=((host, hardware),),
        instances=tuple(scenario_mod.InstanceSpec(profile=profile,
                                                  name=server.uuid,
                                                  host=host)
                        for server, profile in servers),
        arrivals=(), placement='explicit')


class NovaServers(object):
    """Lists the servers Nova has on one host, through Keystone."""

    def __init__(self, conf):
        from keystoneauth1 import loading as ks_loading
        auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
        self.session = ks_loading.load_session_from_conf_options(
            conf, GROUP, auth=auth)
        self.filter = {'service_type': 'compute',
                       'interface': conf[GROUP].interface}
        if conf[GROUP].region_name:
            self.filter['region_name'] = conf[GROUP].region_name

    def __call__(self, host):
        resp = self.session.get(
            '/servers/detail', endpoint_filter=self.filter,
            params={'all_tenants': 1, 'host': host},
            headers={'OpenStack-API-Version':
                     'compute %s' % COMPUTE_MICROVERSION})
        return [server_from_api(s) for s in resp.json()['servers']]


def register_opts(conf):
    from keystoneauth1 import loading as ks_loading
    conf.register_opts(emulated_opts, group=GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_session_conf_options(conf, GROUP)


def list_opts():
    from keystoneauth1 import loading as ks_loading
    return [(GROUP, emulated_opts
             + ks_loading.get_session_conf_options()
             + ks_loading.get_auth_common_conf_options()
             + ks_loading.get_auth_plugin_conf_options('password'))]


def _cap(quota):
    """The report's cpu_quota: the fraction, or None when uncapped."""
    return quota if quota < 1.0 else None


class EmulatedSource(base.Source):
    name = 'emulated'
    emulates_host = True

    def __init__(self, list_servers=None):
        #: host -> [Server]; Nova's by default (tests give their own).
        self.list_servers = list_servers
        self.host = None
        self.scenario = None
        self.hardware = None
        self._by_uuid = {}
        self._sim_uuid = {}
        self.profiles = {}
        self.default_profile = None
        self.sim = None
        self._key = None
        self._generation = 0
        self._clock = sim_source.EmulatedClock()
        self._error = None
        #: collect() rebuilds and steps the simulator, act() changes it.
        self._lock = threading.Lock()

    def open(self, conf):
        register_opts(conf)
        opts = conf[GROUP]
        self.host = conf.agent.host
        try:
            self.scenario = scenario_mod.load(opts.scenario)
        except (ValueError, OSError) as exc:
            self._error = '[emulated] scenario: %s' % exc
            return
        self.hardware = opts.hardware or self.scenario.hosts[0][1]
        if self.hardware not in self.scenario.hardware:
            self._error = ('[emulated] hardware: %s is not a hardware class '
                           'of scenario %s (classes: %s)'
                           % (self.hardware, self.scenario.name,
                              ', '.join(sorted(self.scenario.hardware))))
            return
        self.profiles = dict(opts.profiles)
        self.default_profile = (opts.default_profile
                                or self.scenario.instances[0].profile)
        unknown = sorted((set(self.profiles.values())
                          | {self.default_profile})
                         - set(self.scenario.profiles))
        if unknown:
            self._error = ('[emulated] profiles: %s not in the profile '
                           'library of scenario %s'
                           % (', '.join(unknown), self.scenario.name))
            return
        if self.list_servers is None:
            self.list_servers = NovaServers(conf)

    def _rebuild(self, servers):
        chosen = [(s, choose_profile(s, self.profiles, self.default_profile))
                  for s in sorted(servers, key=lambda s: s.uuid)]
        key = tuple((s.uuid, p) for s, p in chosen)
        if key == self._key:
            return
        self._key = key
        self._generation += 1
        before = self.sim
        old = {inst.name: inst for inst in before.state.instances} \
            if before is not None else {}
        self.sim = simulator.Simulator(emulated_scenario(
            self.scenario, self.host, self.hardware, chosen))
        # Servers that stayed keep where they ran and their CPU cap (a
        # re-pin or a quota lasts until the server leaves, as on a real
        # host); only arrivals are placed anew.
        for inst in self.sim.state.instances:
            kept = old.get(inst.name)
            if kept is not None and kept.profile == inst.profile:
                inst.vcpu_frac = kept.vcpu_frac.copy()
                inst.mem_frac = kept.mem_frac.copy()
                inst.quota = kept.quota
        self._by_uuid = {s.uuid: s for s, _ in chosen}
        self._sim_uuid = {inst.name: inst.uuid
                          for inst in self.sim.state.instances}
        self._clock = sim_source.EmulatedClock()
        LOG.info('emulated source: host %s now runs %d server(s): %s',
                 self.host, len(chosen),
                 ', '.join('%s (%s)' % (s.name, p) for s, p in chosen))

    def act(self, action):
        """Apply ``action`` to the emulated host.

        A server this source has not seen yet is looked up in Nova first:
        a hypervisor knows a domain as soon as its migration lands, and
        Watcher's swap re-pins an arrival at once, before the next
        collection would list it.
        """
        if self._error:
            raise ValueError(self._error)
        with self._lock:
            if action.instance not in self._sim_uuid:
                try:
                    servers = self.list_servers(self.host)
                except Exception as exc:  # any failure of Nova or Keystone
                    raise ValueError('listing the servers of %s in Nova '
                                     'failed: %s' % (self.host, exc))
                if any(s.uuid == action.instance for s in servers):
                    self._rebuild(servers)
            sim_uuid = self._sim_uuid.get(action.instance)
            if self.sim is None or sim_uuid is None:
                raise ValueError('instance %s is not on host %s'
                                 % (action.instance, self.host))
            return sim_source.act_on(self.sim, sim_uuid, action)

    def collect(self, now):
        if self._error:
            return self.unavailable(self._error)
        try:
            servers = self.list_servers(self.host)
        except Exception as exc:  # any failure of Nova or Keystone
            return self.unavailable('emulated: listing the servers of %s '
                                    'in Nova failed: %s' % (self.host, exc))
        with self._lock:
            return self._collect(servers, now)

    def _collect(self, servers, now):
        if not servers:
            # Nothing to emulate: the host's topology alone, so the host
            # is known (and empty) rather than missing.
            self._key, self.sim, self._sim_uuid = None, None, {}
            model = hardware.host_model(
                self.host, self.scenario.hardware[self.hardware])
            return self._emulated(self.available(topology=model.topology))
        try:
            self._rebuild(servers)
        except (ValueError, scenario_mod.ScenarioError) as exc:
            return self.unavailable('emulated: %s' % exc)
        self._clock.step(self.sim, now)
        topology = self.sim.state.hosts[0].model.topology
        samples = []
        for uuid, server in sorted(self._by_uuid.items()):
            sim_uuid = self._sim_uuid[uuid]
            placed = self.sim.placement_of(sim_uuid)
            samples.append(base.InstanceSample(
                uuid=uuid, name=server.name, vcpus=server.vcpus,
                memory_mib=server.memory_mib, flavor=server.flavor,
                image_id=server.image_id, project_id=server.project_id,
                cpu_policy='shared', vcpu_cpus=placed['vcpu_cpus'],
                memory_mib_per_node=placed['memory_mib_per_node'],
                cpu_quota=_cap(self.sim.state.by_uuid[sim_uuid].quota),
                counters=self.sim.cumulative_counters(sim_uuid),
                incarnation='emulated-%s-%d' % (self.host,
                                                self._generation)))
        return self._emulated(self.available(topology=topology,
                                             instances=tuple(samples),
                                             read_at=now))

    @staticmethod
    def _emulated(sample):
        return dataclasses.replace(sample, status=dataclasses.replace(
            sample.status, reason='emulated'))
