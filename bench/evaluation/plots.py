"""The page's plots (matplotlib, Agg backend); every one labelled simulated.
"""

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402

from bench.evaluation.plan import ENTRIES  # noqa: E402
from bench.evaluation.plan import WHAT_IF_RATIO  # noqa: E402
from bench.evaluation.verdict import best_ours  # noqa: E402


def plot_perf(results, path):
    names = list(results)
    labels = [e.label for e in ENTRIES]
    fig, ax = plt.subplots(figsize=(13, 6))
    width = 0.8 / len(labels)
    cmap = plt.get_cmap('tab20')
    for k, label in enumerate(labels):
        vals = [results[n][1][label][0].perf_mean for n in names]
        ax.bar([i + k * width for i in range(len(names))], vals, width,
               label=label, color=cmap(k))
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))])
    ax.set_xticklabels(names)
    ax.set_ylabel('mean normalised performance')
    ax.set_ylim(0, 1.05)
    ax.set_title('Mean normalised performance per policy (SIMULATED)')
    ax.legend(fontsize=7, ncol=4, loc='upper center',
              bbox_to_anchor=(0.5, -0.08))
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_over_worst(results, overcommit, path):
    names = list(results)
    series = (('best of ours', None), ('oracle', 'oracle'),
              ('merlin low_cost', 'merlin low_cost'),
              ('watcher workload_balance', 'watcher workload_balance'))
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / (len(series) + 1)
    for k, (title, label) in enumerate(series):
        vals = []
        for n in names:
            rows, extra = results[n][1], results[n][3]
            vals.append(100 * extra[label or best_ours(rows)][0])
        ax.bar([i + k * width for i in range(len(names))], vals, width,
               label=title)
    ours = [e.label for e in ENTRIES if e.group == 'ours']
    what_if = [(i, 100 * (max(overcommit[n][lb].perf_mean for lb in ours)
                          / results[n][2].perf_mean - 1))
               for i, n in enumerate(names) if n in overcommit]
    if what_if:
        ax.scatter([i + 0.4 - width / 2 for i, _ in what_if],
                   [y for _, y in what_if], marker='D', color='tab:blue',
                   edgecolor='black', zorder=3,
                   label='best of ours, what-if cpu_allocation_ratio '
                   '%.1f' % WHAT_IF_RATIO)
    ax.bar([0 + len(series) * width], [17.0], width, color='black',
           label='Ahn et al. reported (WL1, cache-aware, real testbed)')
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(names))])
    ax.set_xticklabels(names)
    ax.set_ylabel('improvement over the worst placement (%)')
    ax.set_title('Improvement over the worst placement (SIMULATED; black '
                 'bar: the paper\'s figure)')
    ax.axhline(0, color='grey', lw=0.5)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_sweep(rows, path):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, title in (('cache_sc', 'cache_aware_swap (sensitivity_cost)'),
                       ('cache_ex', 'cache_aware_swap (extreme)'),
                       ('numa_sc', 'numa_aware_swap'),
                       ('numa_mix', 'numa_aware_swap (model check, core)'),
                       ('wb', 'watcher workload_balance'),
                       ('ws', 'watcher workload_stabilization'),
                       ('model', 'building Watcher\'s compute model')):
        pts = [(r['hosts'], r[key]) for r in rows if key in r]
        if pts:
            ax.plot([p[0] for p in pts], [max(p[1], 1e-4) for p in pts],
                    marker='o', label=title,
                    ls='--' if key == 'model' else '-')
    ax.set_xscale('log')
    ax.set_yscale('log')
    ax.set_xlabel('hosts (20 instances each)')
    ax.set_ylabel('decision time (CPU s)')
    ax.set_title('Decision time vs cluster size (synthetic clusters)')
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def plot_family(family, labels, key, path, ylabel, title):
    """A box per row of one figure of :func:`verdict.cluster_figures`."""
    from bench.evaluation import verdict
    data, names = [], []
    for label in labels:
        vals = [100 * verdict.cluster_figures(rows, label)[key]
                for _, rows in family.values() if label in rows]
        if vals:
            data.append(vals)
            names.append(label)
    if not data:
        return
    fig, ax = plt.subplots(figsize=(11, 5))
    ax.boxplot(data, whis=(5, 95), showfliers=True)
    ax.set_xticks(range(1, len(names) + 1))
    ax.set_xticklabels(names, rotation=30, ha='right', fontsize=8)
    ax.axhline(0, color='grey', lw=0.5)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
