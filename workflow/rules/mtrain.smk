# MTrain (multi-FPGA training): Figure 8 (steps), Figures 9-11 (against Alpa, HAP, single FPGAs),
# Table III (MTrain-Converting against the DFS optimum), Figure 12 (scaling) and compare.csv.
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
# Not yet measured: mtrain_table3, mtrain_scaling, mtrain_report and the MTrain figures had not run when the table
# was taken (the full run was still going); they keep the quick config's mem_mb and the profile's default runtime.

wildcard_constraints:
    mmodel="|".join(MTRAIN_MODELS) or "NONE",
    cluster=r"cluster\w*",


rule mtrain_calibrate:
    conda:
        TRAINCOST_ENV
    input:
        unpack(mtrain_calibration_inputs),
    output:
        table="results/mtrain/calibration.parquet",
    params:
        **PLAN.mtrain_calibration_params(),
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # full run: peak 147 MB
        runtime=6,  # minutes; full run: longest job 6 s
    log:
        "results/logs/mtrain_calibrate.log",
    benchmark:
        "results/benchmarks/mtrain_calibrate.tsv",
    shell:
        "traincost mtrain-calibrate --ops {input.ops} --tensors {input.tensors} --devices {input.devices} --ips {input.ips} "
        "--targets {input.targets} --label {params.label} {params.calibrate} --out {output.table} > {log} 2>&1"


rule mtrain_study:
    conda:
        TRAINCOST_ENV
    input:
        unpack(mtrain_workload),
        devices=PLAN.mtrain_devices,
        ips=PLAN.mtrain_ips,
        calibration="results/mtrain/calibration.parquet",
    output:
        table="results/mtrain/study/{mmodel}/{cluster}.parquet",
    params:
        bandwidths=PLAN.mtrain_bandwidths,
        step=mtrain_ratio_step,
        assume=assume_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # full run: peak 182 MB
        runtime=7,  # minutes; full run: longest job 58 s
    log:
        "results/logs/mtrain_study/{mmodel}/{cluster}.log",
    benchmark:
        "results/benchmarks/mtrain_study/{mmodel}/{cluster}.tsv",
    shell:
        "traincost mtrain-study --ops {input.ops} --tensors {input.tensors} --devices {input.devices} --ips {input.ips} --cluster {wildcards.cluster} "
        "--label {wildcards.mmodel} --bandwidths {params.bandwidths} --step {params.step} --calibration {input.calibration}{params.assume} "
        "--out {output.table} > {log} 2>&1"


rule mtrain_table3:
    conda:
        TRAINCOST_ENV
    input:
        unpack(mtrain_workload),
        devices=PLAN.mtrain_devices,
        ips=PLAN.mtrain_ips,
        calibration="results/mtrain/calibration.parquet",
    output:
        table="results/mtrain/table3/{mmodel}/{cluster}.parquet",
    params:
        bandwidth=PLAN.mtrain_table3_bandwidth,
        step=mtrain_ratio_step,
        assume=assume_flag,
    threads: table3_workers
    resources:
        mem_mb=job_mem_mb(700),  # peak 418 MB: main process and its 2 workers together
        runtime=7,  # minutes; full run of 26 November 2026: longest job 39 s
    log:
        "results/logs/mtrain_table3/{mmodel}/{cluster}.log",
    benchmark:
        "results/benchmarks/mtrain_table3/{mmodel}/{cluster}.tsv",
    shell:
        "traincost mtrain-table3 --ops {input.ops} --tensors {input.tensors} --devices {input.devices} --ips {input.ips} --cluster {wildcards.cluster} "
        "--label {wildcards.mmodel} --bandwidth {params.bandwidth} --step {params.step} --workers {threads} --calibration {input.calibration}"
        "{params.assume} --out {output.table} > {log} 2>&1"


rule mtrain_scaling:
    conda:
        TRAINCOST_ENV
    input:
        unpack(scaling_inputs),
        devices=PLAN.mtrain_devices,
        ips=PLAN.mtrain_ips,
        calibration="results/mtrain/calibration.parquet",
    output:
        table="results/mtrain/scaling/pairs{pairs}.parquet",
    params:
        **PLAN.mtrain_scaling_params(),
        fewer=fewer_fpgas_flag,
        assume=assume_flag,
    threads: scaling_workers
    resources:
        mem_mb=job_mem_mb(700),  # peak 416 MB with 2 workers (main process and both together)
        runtime=8,  # minutes; full run of 26 November 2026 (commit 8b6137e): longest job 69 s (4 pairs, 2 processes)
    log:
        "results/logs/mtrain_scaling/pairs{pairs}.log",
    benchmark:
        "results/benchmarks/mtrain_scaling/pairs{pairs}.tsv",
    shell:
        "traincost mtrain-scaling --ops {input.ops} --tensors {input.tensors} --devices {input.devices} --ips {input.ips} --cluster {params.cluster} "
        "--label {params.model} --pairs {wildcards.pairs} --bandwidths {params.bandwidths} --step {params.step} "
        "--workers {threads} --calibration {input.calibration}{params.fewer}{params.assume} --out {output.table} > {log} 2>&1"


# MTrain's Table III under each constant the paper does not state (DSPs per FP32 MAC, fabric clock, VGG-16's input):
# the cells of each such ablation (config ablations.mtrain) are part of the study's run, and mtrain-report judges
# Converting's nearness to the DFS under all of them
rule mtrain_constants:
    conda:
        TRAINCOST_ENV
    input:
        **PLAN.mtrain_constants_inputs(),
        paper="data/paper/mtrain.csv",
    output:
        md=report(
            "results/mtrain/table3_constants.md",
            caption="../report/mtrain_constants.rst",
            category="MTrain",
            subcategory="Tables",
        ),
        csv="results/mtrain/table3_constants.csv",
    params:
        tables=PLAN.mtrain_constants_flags(),
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # as mtrain_report, reading Table III only
        runtime=6,  # minutes
    log:
        "results/logs/mtrain_constants.log",
    benchmark:
        "results/benchmarks/mtrain_constants.tsv"
    shell:
        "traincost mtrain-constants --paper {input.paper} {params.tables} --csv {output.csv} --md {output.md} > {log} 2>&1"


# MTrain's paper-vs-ours table; an ablation run (ablations.smk) re-uses the rule, {params.assume} its assumption.
rule mtrain_report:
    conda:
        TRAINCOST_ENV
    input:
        unpack(mtrain_report_tables),
        paper="data/paper/mtrain.csv",
        claims="data/paper/mtrain_claims.csv",
        calibration="results/mtrain/calibration.parquet",
        constants=PLAN.mtrain_constants_csv(),
    output:
        study="results/mtrain/study.parquet",
        scaling="results/mtrain/scaling.parquet",
        table3="results/mtrain/table3.parquet",
        table3_csv=report(
            "results/mtrain/table3.csv",
            caption="../report/mtrain_table3.rst",
            category="MTrain",
            subcategory="Tables",
        ),
        table3_md="results/mtrain/table3.md",
        compare=report(
            COMPARISON_CSVS["mtrain"],
            caption="../report/mtrain_compare.rst",
            category="MTrain",
            subcategory="Paper vs ours",
        ),
        split=report(
            "results/mtrain/split.csv",
            caption="../report/mtrain_split.rst",
            category="MTrain",
            subcategory="Tables",
        ),
    params:
        constants=constants_flag,
        assume=assume_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # peak 224 MB
        runtime=6,  # minutes; full run of 26 November 2026: longest job 4 s
    log:
        "results/logs/mtrain_report.log",
    benchmark:
        "results/benchmarks/mtrain_report.tsv",
    shell:
        "traincost mtrain-report --study {input.study} --table3 {input.table3} --scaling {input.scaling} --paper {input.paper} "
        "--claims {input.claims} "
        "--study-out {output.study} --scaling-out {output.scaling} --table3-parquet {output.table3} --table3-csv {output.table3_csv} "
        "--table3-md {output.table3_md} --compare {output.compare} --split {output.split} --calibration {input.calibration}"
        "{params.constants}{params.assume} > {log} 2>&1"


rule mtrain_figure8:
    conda:
        TRAINCOST_ENV
    input:
        table=rules.mtrain_report.output.study,
        compare=rules.mtrain_report.output.compare,  # the paper's numbers, drawn beside ours
    output:
        png=report(
            "results/mtrain/figure8.png",
            caption="../report/mtrain_figure8.rst",
            category="MTrain",
            subcategory="Figures",
        ),
        pdf="results/mtrain/figure8.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # peak 237 MB
        runtime=6,  # minutes; full run of 26 November 2026: longest job 5 s
    log:
        "results/logs/mtrain_figure8.log",
    benchmark:
        "results/benchmarks/mtrain_figure8.tsv",
    shell:
        "traincost plot-mtrain --figure steps --in {input.table} --compare {input.compare} "
        "--out {output.png} {output.pdf} > {log} 2>&1"


rule mtrain_figure9_11:
    conda:
        TRAINCOST_ENV
    input:
        table=rules.mtrain_report.output.study,
        compare=rules.mtrain_report.output.compare,  # the paper's numbers, drawn beside ours
    output:
        png=report(
            "results/mtrain/figure9_11_{cluster}.png",
            caption="../report/mtrain_figure9_11.rst",
            category="MTrain",
            subcategory="Figures",
        ),
        pdf="results/mtrain/figure9_11_{cluster}.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # peak 240 MB
        runtime=6,  # minutes; full run of 26 November 2026: longest job 6 s
    log:
        "results/logs/mtrain_figure9_11/{cluster}.log",
    benchmark:
        "results/benchmarks/mtrain_figure9_11/{cluster}.tsv",
    shell:
        "traincost plot-mtrain --figure methods --cluster {wildcards.cluster} --in {input.table} "
        "--compare {input.compare} "
        "--out {output.png} {output.pdf} > {log} 2>&1"


rule mtrain_figure12:
    conda:
        TRAINCOST_ENV
    input:
        table=rules.mtrain_report.output.scaling,
        compare=rules.mtrain_report.output.compare,  # the paper's numbers, drawn beside ours
    output:
        png=report(
            "results/mtrain/figure12.png",
            caption="../report/mtrain_figure12.rst",
            category="MTrain",
            subcategory="Figures",
        ),
        pdf="results/mtrain/figure12.pdf",
    params:
        bandwidth=PLAN.mtrain_search_bandwidth,
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # peak 242 MB
        runtime=6,  # minutes; full run of 26 November 2026: longest job 4 s
    log:
        "results/logs/mtrain_figure12.log",
    benchmark:
        "results/benchmarks/mtrain_figure12.tsv",
    shell:
        "traincost plot-mtrain --figure scaling --search-bandwidth {params.bandwidth} --in {input.table} "
        "--compare {input.compare} "
        "--out {output.png} {output.pdf} > {log} 2>&1"
