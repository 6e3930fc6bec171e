# TM-Training (tiered-memory training): the Table 3 workloads as analytic training steps, every placement
# policy at every Tier 1 size (Figures 2-4, 8-12), the doubled batch (Figure 13), replacement variants
# (Figure 14), half the Tier 2 bandwidth (Figure 15), compare.csv and Table 3.
#
# Resources: `threads` as each rule says. `mem_mb` (the tool's; job_mem_mb adds Snakemake's own on a cluster, see
# common.smk) is 1.5 x the largest peak of the rule's jobs in a full run (`snakemake --cores 2`, config/config.yaml,
# 25 November 2026; tests/fixtures/benchmarks/full_run.csv), rounded up to 100 MB, or the value measured before on
# the quick config where that is larger; the peak is noted beside each value. Peak = the larger of Snakemake's
# benchmark max_rss of the job's process tree (sampled every 0.5 s for 15 s, then every 30 s, so it can miss a long
# job's peak) and the same tree sampled every 0.5 s throughout by bench/job_peaks.py (the jobs of the run's last
# hour). `runtime` (minutes,
# what a cluster job asks) is 2 x the rule's longest job in that run, which shared 2 cores with other work, plus
# 5 minutes for Snakemake's start on a node. tests/integration/test_rule_resources.py checks both against the table.


wildcard_constraints:
    tworkload="|".join(PLAN.tiered_workloads) or "NONE",
    variant="|".join(TIERED_VARIANTS) or "NONE",
    factor=r"\d+",


rule tiered_workload:
    conda:
        TRAINCOST_ENV
    output:
        ops="results/tiered/workloads/{tworkload}/batch{factor}/ops.parquet",
        tensors="results/tiered/workloads/{tworkload}/batch{factor}/tensors.parquet",
    threads: 1
    resources:
        mem_mb=job_mem_mb(600),  # full run: peak 343 MB
        runtime=6,  # minutes; full run: longest job 16 s
    log:
        "results/logs/tiered_workload/{tworkload}/batch{factor}.log",
    benchmark:
        "results/benchmarks/tiered_workload/{tworkload}/batch{factor}.tsv",
    shell:
        "traincost tiered-workload --workload {wildcards.tworkload} --batch-factor {wildcards.factor} "
        "--ops {output.ops} --tensors {output.tensors} > {log} 2>&1"


rule tiered_calibrate:
    conda:
        TRAINCOST_ENV
    input:
        ops=expand("results/tiered/workloads/{tworkload}/batch1/ops.parquet", tworkload=PLAN.tiered_workloads),
        tensors=expand("results/tiered/workloads/{tworkload}/batch1/tensors.parquet", tworkload=PLAN.tiered_workloads),
        hardware=PLAN.tiered_hardware,
        paper="data/paper/tm_training.csv",
    output:
        table="results/tiered/calibration.parquet",
    params:
        **PLAN.tiered_calibration_params(),
    threads: 1
    resources:
        mem_mb=job_mem_mb(700),  # full run: peak 418 MB
        runtime=7,  # minutes; full run: longest job 30 s
    log:
        "results/logs/tiered_calibrate.log",
    benchmark:
        "results/benchmarks/tiered_calibrate.tsv",
    shell:
        "traincost calibrate --study tiered --hardware {input.hardware} --ops {input.ops} --tensors {input.tensors} "
        "--paper {input.paper} --target {params.target} --also-pins {params.also} {params.calibrate} "
        "--out {output.table} > {log} 2>&1"


# One workload and variant of the study; an ablation run (ablations.smk) re-uses the rule, {params.assume} its
# assumption and the study's record of every simulation its input.
rule tiered_study:
    conda:
        TRAINCOST_ENV
    input:
        unpack(tiered_workload),
        hardware=PLAN.tiered_hardware,
        calibration="results/tiered/calibration.parquet",
    output:
        table="results/tiered/study/{tworkload}/{variant}.parquet",
        # every simulation's tally: the ablations re-use what their assumption does not change
        record="results/tiered/records/{tworkload}/{variant}.parquet",
    params:
        ratios=tiered_ratios,
        policies=PLAN.tiered_policies,
        tier1=PLAN.tiered_tier1_sizing(),
        assume=assume_flag,
        record=record_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(700),  # full run: peak 417 MB
        runtime=15,  # minutes; full run: longest job 284 s
    log:
        "results/logs/tiered_study/{tworkload}/{variant}.log",
    benchmark:
        "results/benchmarks/tiered_study/{tworkload}/{variant}.tsv",
    shell:
        "traincost tiered-study --ops {input.ops} --tensors {input.tensors} --hardware {input.hardware} "
        "--variant {wildcards.variant} --ratios {params.ratios} --calibration {input.calibration} "
        "$(test -n '{params.policies}' && echo --policies {params.policies}) "
        "{params.tier1}{params.assume} --out {output.table} {params.record} > {log} 2>&1"


# TM-Training's paper-vs-ours table; an ablation run (ablations.smk) re-uses the rule, {params.assume} its assumption.
rule tiered_report:
    conda:
        TRAINCOST_ENV
    input:
        study=tiered_study_tables,
        paper="data/paper/tm_training.csv",
        claims="data/paper/tm_training_claims.csv",
        table3="data/paper/tm_training_table3.csv",
        calibration="results/tiered/calibration.parquet",
    output:
        study="results/tiered/study.parquet",
        compare=report(
            COMPARISON_CSVS["tiered"],
            caption="../report/tiered_compare.rst",
            category="TM-Training",
            subcategory="Paper vs ours",
        ),
        table3=report(
            "results/tiered/table3.csv",
            caption="../report/tiered_table3.rst",
            category="TM-Training",
            subcategory="Tables",
        ),
        ordering=report(
            "results/tiered/ordering.csv",
            caption="../report/tiered_ordering.rst",
            category="TM-Training",
            subcategory="Tables",
        ),
        placement=report(
            "results/tiered/placement.csv",
            caption="../report/tiered_placement.rst",
            category="TM-Training",
            subcategory="Tables",
        ),
        tier2_reads=report(
            "results/tiered/tier2_reads.csv",
            caption="../report/tiered_tier2_reads.rst",
            category="TM-Training",
            subcategory="Tables",
        ),
    params:
        assume=assume_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(700),  # full run: peak 354 MB; the quick config's 700 is larger
        runtime=6,  # minutes; full run: longest job 12 s
    log:
        "results/logs/tiered_report.log",
    benchmark:
        "results/benchmarks/tiered_report.tsv",
    shell:
        "traincost tiered-report --study {input.study} --paper {input.paper} --claims {input.claims} --table3 {input.table3} "
        "--calibration {input.calibration} "
        "--study-out {output.study} --compare {output.compare} --data-size {output.table3} "
        "--ordering {output.ordering} --placement {output.placement} --tier2-reads {output.tier2_reads}{params.assume} "
        "> {log} 2>&1"


# one rule per figure, each with its own caption
for _figure in TIERED_FIGURES:

    rule:
        name:
            f"tiered_{_figure}"
        conda:
            TRAINCOST_ENV
        input:
            table=rules.tiered_report.output.study,
            compare=rules.tiered_report.output.compare,  # the paper's numbers, drawn beside ours
        output:
            png=report(
                f"results/tiered/{_figure}.png",
                caption=f"../report/tiered_{_figure}.rst",
                category="TM-Training",
                subcategory="Figures",
            ),
            pdf=f"results/tiered/{_figure}.pdf",
        params:
            figure=_figure,
            # only the settings this figure uses, so that changing another one does not re-draw it
            settings=PLAN.tiered_figure_settings(_figure),
        threads: 1
        resources:
            mem_mb=job_mem_mb(400),  # full run: peak 249 MB
            runtime=6,  # minutes; full run: longest job 14 s
        log:
            f"results/logs/tiered_{_figure}.log",
        benchmark:
            f"results/benchmarks/tiered_{_figure}.tsv",
        shell:
            "traincost plot-tiered --figure {params.figure} {params.settings} --in {input.table} --compare {input.compare} "
            "--out {output.png} {output.pdf} > {log} 2>&1"


# Figure 12 as an interactive page beside the static one: every run behind its geometric mean (a workload, a policy,
# a Tier 1 : model ratio) a point to hover, to compare with another (click two) and to filter by policy or ratio.
rule tiered_fig12_interactive:
    conda:
        TRAINCOST_ENV
    input:
        table=rules.tiered_report.output.study,
    output:
        html=report(
            "results/tiered/fig12.html",
            caption="../report/tiered_fig12_interactive.rst",
            category="TM-Training",
            subcategory="Design spaces (interactive)",
        ),
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # as the figures, which read the same table (not in the full run's table yet)
        runtime=6,  # minutes; the quick config's job: 1 s
    log:
        "results/logs/tiered_fig12_interactive.log",
    benchmark:
        "results/benchmarks/tiered_fig12_interactive.tsv",
    shell:
        "traincost design-space-tiered --in {input.table} "
        "--title 'TM-Training Figure 12: every run behind the geometric mean' --out {output.html} > {log} 2>&1"
