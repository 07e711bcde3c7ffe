"""The agent's configuration options, all in the ``[agent]`` group.

``list_opts`` is the ``oslo.config.opts`` entry point
``contention.agent`` so that ``oslo-config-generator`` (config file
``etc/oslo-config-generator/contention-agent.conf``) writes the sample
``etc/contention/agent.conf.sample``.
"""

import socket

from oslo_config import cfg

from contention import report
from contention import telemetry_bus

GROUP = 'agent'

agent_opts = [
    cfg.StrOpt('host', default=socket.gethostname(),
               sample_default='<hostname>',
               help='Name of this compute node as Nova knows it. It is the '
                    'report\'s host, the publisher id suffix and the RPC '
                    'server name, so it must match nova-compute\'s [DEFAULT] '
                    'host.'),
    cfg.FloatOpt('interval', default=report.DEFAULT_INTERVAL_S, min=0.5,
                 help='Seconds between two collections. Counters become '
                      'deltas over this interval.'),
    cfg.ListOpt('sources', default=['libvirt', 'resctrl', 'numa_memory'],
                help='Counter sources to run, by their name in the '
                     'contention.agent.sources entry-point namespace. A '
                     'source the host cannot support is reported as '
                     'unavailable, not as zeros.'),
    cfg.StrOpt('libvirt_uri', default='qemu:///system',
               help='libvirt connection URI (the one nova-compute uses).'),
    cfg.FloatOpt('libvirt_reconnect_min', default=1.0, min=0.1,
                 help='Seconds to wait before the first reconnection '
                      'attempt after the libvirt connection is lost; the '
                      'wait doubles on each failure.'),
    cfg.FloatOpt('libvirt_reconnect_max', default=60.0, min=1.0,
                 help='Longest wait between two libvirt reconnection '
                      'attempts.'),
    cfg.ListOpt('perf_events',
                default=['instructions', 'cpu_cycles', 'cache_references',
                         'cache_misses'],
                help='libvirt perf events enabled live on every domain '
                     '(virDomainSetPerfEvents). Empty leaves the domains\' '
                     'perf settings alone. Each event costs a hardware '
                     'counter per vCPU thread.'),
    cfg.StrOpt('resctrl_mode', default='libvirt',
               choices=[('libvirt', 'cpu.cache.monitor.* and '
                         'memory.bandwidth.monitor.* from libvirt\'s domain '
                         'stats (needs <cachetune>/<memorytune> monitors in '
                         'the domain XML)'),
                        ('sysfs', 'mon_groups under resctrl_root whose name '
                         'is the instance uuid')],
               help='Where the resctrl source reads LLC occupancy and '
                    'memory bandwidth.'),
    cfg.StrOpt('resctrl_root', default='/sys/fs/resctrl',
               help='Mount point of the resctrl file system.'),
    cfg.StrOpt('numa_memory_method', default='numa_maps',
               choices=[('numa_maps', '/proc/<pid>/numa_maps of the QEMU '
                         'process: every mapping, hugepages included'),
                        ('numa_stat', 'the QEMU cgroup\'s memory.numa_stat '
                         '(cgroup v2): charged memory only, hugetlbfs pages '
                         'are missing')],
               help='How the numa_memory source measures each domain\'s '
                    'memory per host NUMA node.'),
    cfg.IntOpt('numa_memory_refresh', default=6, min=1,
               help='Read each instance\'s memory per NUMA node every this '
                    'many collections (spread evenly over the cycles; a '
                    'new instance is read at once); in between the last '
                    'reading is reported. numa_maps walks the QEMU '
                    'process\'s page tables, which costs milliseconds per '
                    'instance, and memory placement changes slowly. 1 '
                    'reads every instance every cycle.'),
    cfg.StrOpt('proc_root', default='/proc',
               help='Mount point of procfs (changed only in tests).'),
    cfg.StrOpt('cgroup_root', default='/sys/fs/cgroup',
               help='Mount point of the cgroup v2 hierarchy.'),
    cfg.StrOpt('sysfs_root', default='/sys',
               help='Mount point of sysfs, read for the cache topology.'),
    cfg.StrOpt('notification_topic', default=report.TOPIC,
               help='Topic the host reports are published on (the '
                    'collector\'s [collector] topic). The reports do not '
                    'follow [oslo_messaging_notifications] topics, which '
                    'other services\' notifications use.'),
    cfg.BoolOpt('compress_reports', default=True,
                help='Send reports gzip-compressed on RabbitMQ: sets '
                     '[oslo_messaging_rabbit] kombu_compression to gzip '
                     'when that option is not set (an explicit value wins). '
                     'A report is about 0.9 KiB of JSON per instance, most '
                     'of it field names, and compresses about tenfold; '
                     'consumers decompress transparently.'),
    cfg.IntOpt('buffer_size', default=60, min=1,
               help='Reports kept while the message broker is unreachable; '
                    'when full the oldest is dropped and counted in the '
                    'events of the next report sent (reports_dropped:N).'),
    cfg.StrOpt('shared_cpu_set', default=None,
               help='Host CPUs (e.g. "4-15,20-31") that repin_instance may '
                    'use: Nova\'s [compute] cpu_shared_set. Unset means '
                    'every CPU of the host. With dedicated_cpu_set, it '
                    'is reported as the CPUs Nova places instances on '
                    '(nova_cpus), which the strategies plan on.'),
    cfg.StrOpt('dedicated_cpu_set', default=None,
               help='Nova\'s [compute] cpu_dedicated_set. A domain with a '
                    'vCPU pinned inside it is a dedicated or mixed '
                    'instance, which local actions refuse to touch. Unset: '
                    'a domain whose vCPUs are each pinned to its own single '
                    'CPU counts as dedicated.'),
    cfg.FloatOpt('memory_bandwidth_gbps', default=None, min=0.1,
                 help='Sustainable DRAM bandwidth of each NUMA node\'s '
                      'memory controller on this host, GB/s: the vendor\'s '
                      'figure for its memory channels, or what a STREAM '
                      'triad reaches on an idle node. Reported in the '
                      'host topology; the strategies\' harm check judges '
                      'the queue a plan\'s memory traffic builds at a '
                      'controller against it. Unset: unknown, and no plan '
                      'is judged by its controllers\' queues.'),
    cfg.IntOpt('cpu_period_us', default=100000, min=1000, max=1000000,
               help='CFS period (microseconds) set together with the quota '
                    'by set_cpu_quota.'),
]


def register_opts(conf):
    conf.register_opts(agent_opts, group=GROUP)


def list_opts():
    return [(GROUP, agent_opts)] + telemetry_bus.list_opts()
