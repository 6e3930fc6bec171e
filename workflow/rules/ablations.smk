# Ablations (`snakemake --cores 2 ablations`, not part of `all`): each study's comparison re-run with one modelling
# assumption changed at a time (config `ablations:`), set beside the study's own comparison. Per study:
# results/<study>/ablations.parquet, the comparison with a `why` column, and a heat map (assumptions x checks).
# Every run re-uses the study's cached workloads, calibration and tables; only what the assumption changes re-runs
# (MONET: a job whose files and flags the assumption leaves as the study's is the study's job, Plan.monet_root;
# TM-Training: the study's record gives the runs of every policy whose simulation the assumption does not change,
# priced anew; traincost.tiered.study.resimulated).
#
# Every run re-uses its study's rules (`use rule … with:`) with new outputs, logs and benchmarks, and a runtime where
# an ablation's jobs take another time than the study's (resources otherwise the study rule's). Its jobs' inputs and
# flags follow the wildcards {assumption} and {value} through common.smk's functions (the Plan's paths and flags of an
# ablation run): the assumption is the `{params.assume}` of TM-Training's, MTrain's and MONET's comparisons, and the
# scheduler flags of MONET's runs (`{params.resident}`, and the sweeps' `{params.tiling}` and `{params.allocation}`),
# empty or as configured in the study's own jobs. Only what the ablations alone need has a rule of its own here.


wildcard_constraints:
    assumption=r"[a-z0-9_]+",
    value=r"[a-z0-9._]+",


# TM-Training and MTrain under the assumption, writing under the ablation's root.
use rule tiered_study as tiered_ablation_study with:
    input:
        unpack(tiered_workload),
        hardware=PLAN.tiered_hardware,
        calibration="results/tiered/calibration.parquet",
        record=rules.tiered_study.output.record,  # the study's simulations, re-used where the assumption changes none
    output:
        table="results/ablations/tiered/{assumption}/{value}/study/{tworkload}/{variant}.parquet",
    resources:
        mem_mb=job_mem_mb(700),  # as tiered_study
        runtime=7,  # minutes; full run of 26 November 2026: longest job 49 s
    log:
        "results/logs/ablations/tiered/{assumption}/{value}/{tworkload}/{variant}.log",
    benchmark:
        "results/benchmarks/ablations/tiered/{assumption}/{value}/{tworkload}/{variant}.tsv"


use rule tiered_report as tiered_ablation_report with:
    output:
        compare="results/ablations/tiered/{assumption}/{value}/compare.csv",
        study=temp("results/ablations/tiered/{assumption}/{value}/study.parquet"),
        table3=temp("results/ablations/tiered/{assumption}/{value}/table3.csv"),
        ordering=temp("results/ablations/tiered/{assumption}/{value}/ordering.csv"),
        placement=temp("results/ablations/tiered/{assumption}/{value}/placement.csv"),
        tier2_reads=temp("results/ablations/tiered/{assumption}/{value}/tier2_reads.csv"),
    log:
        "results/logs/ablations/tiered/{assumption}/{value}/report.log",
    benchmark:
        "results/benchmarks/ablations/tiered/{assumption}/{value}/report.tsv"


use rule mtrain_study as mtrain_ablation_study with:
    output:
        table="results/ablations/mtrain/{assumption}/{value}/study/{mmodel}/{cluster}.parquet",
    resources:
        mem_mb=job_mem_mb(300),  # as mtrain_study
        runtime=9,  # minutes; full run of 26 November 2026: longest job 103 s
    log:
        "results/logs/ablations/mtrain/{assumption}/{value}/study/{mmodel}/{cluster}.log",
    benchmark:
        "results/benchmarks/ablations/mtrain/{assumption}/{value}/study/{mmodel}/{cluster}.tsv"


use rule mtrain_table3 as mtrain_ablation_table3 with:
    output:
        table="results/ablations/mtrain/{assumption}/{value}/table3/{mmodel}/{cluster}.parquet",
    log:
        "results/logs/ablations/mtrain/{assumption}/{value}/table3/{mmodel}/{cluster}.log",
    benchmark:
        "results/benchmarks/ablations/mtrain/{assumption}/{value}/table3/{mmodel}/{cluster}.tsv"


use rule mtrain_scaling as mtrain_ablation_scaling with:
    output:
        table="results/ablations/mtrain/{assumption}/{value}/scaling/pairs{pairs}.parquet",
    resources:
        mem_mb=job_mem_mb(700),  # as mtrain_scaling
        runtime=9,  # minutes; full run of 26 November 2026: longest job 114 s (on 2 threads)
    log:
        "results/logs/ablations/mtrain/{assumption}/{value}/scaling/pairs{pairs}.log",
    benchmark:
        "results/benchmarks/ablations/mtrain/{assumption}/{value}/scaling/pairs{pairs}.tsv"


use rule mtrain_report as mtrain_ablation_report with:
    output:
        compare="results/ablations/mtrain/{assumption}/{value}/compare.csv",
        study=temp("results/ablations/mtrain/{assumption}/{value}/study.parquet"),
        scaling=temp("results/ablations/mtrain/{assumption}/{value}/scaling.parquet"),
        table3=temp("results/ablations/mtrain/{assumption}/{value}/table3.parquet"),
        table3_csv=temp("results/ablations/mtrain/{assumption}/{value}/table3.csv"),
        table3_md=temp("results/ablations/mtrain/{assumption}/{value}/table3.md"),
        split="results/ablations/mtrain/{assumption}/{value}/split.csv",
    log:
        "results/logs/ablations/mtrain/{assumption}/{value}/report.log",
    benchmark:
        "results/benchmarks/ablations/mtrain/{assumption}/{value}/report.tsv"


rule ablation_table:
    conda:
        TRAINCOST_ENV
    input:
        unpack(ablation_table_inputs),
    output:
        table="results/{study}/ablations.parquet",
        why="results/{study}/compare_why.csv",
        png=report(
            "results/{study}/ablations.png",
            caption="../report/ablations.rst",
            category=study_category,
            subcategory="Ablations",
        ),
        pdf="results/{study}/ablations.pdf",
    wildcard_constraints:
        study="monet|mtrain|tiered",
    params:
        runs=ablation_run_flags,
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),
        runtime=6,  # minutes; full run of 26 November 2026: longest job 9 s
    log:
        "results/logs/ablation_table/{study}.log",
    benchmark:
        "results/benchmarks/ablation_table/{study}.tsv",
    shell:
        "traincost ablations --study {wildcards.study} --baseline {input.baseline} {params.runs} "
        "--out {output.table} --why {output.why} --heatmap {output.png} {output.pdf} > {log} 2>&1"


rule agreement_counts:
    conda:
        TRAINCOST_ENV
    input:
        **PLAN.agreement_counts_inputs(),
    output:
        counts=report(
            "results/agreement_counts.csv",
            caption="../report/agreement_counts.rst",
            category="Paper vs ours",
            subcategory="Before and after calibration",
        ),
        page=report(
            "results/fidelity.md",
            caption="../report/fidelity_page.rst",
            category="Paper vs ours",
            subcategory="Before and after calibration",
        ),
    threads: 1
    resources:
        mem_mb=job_mem_mb(200),  # as agreement_table
        runtime=6,  # minutes; full run of 26 November 2026: longest job 1 s
    log:
        "results/logs/agreement_counts.log",
    benchmark:
        "results/benchmarks/agreement_counts.tsv",
    shell:
        "traincost summary --results results --disagreeing --counts-out {output.counts} --markdown {output.page} > {log} 2>&1"


# MONET under the assumption: section IV's sweeps, each whole (no shards; `{params.shard}` empty), the ablated
# resident fraction, fusion tiling or allocation, or the sweep's own.
use rule hardware_sweep_shard as monet_ablation_sweep with:
    output:
        table="results/ablations/monet/{assumption}/{value}/sweeps/{sweep}/{step}.parquet",
    log:
        "results/logs/ablations/monet/{assumption}/{value}/{sweep}/{step}.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/{sweep}/{step}.tsv"


rule bn_epilogue_workload:
    conda:
        TRAINCOST_ENV
    input:
        ops="results/workloads/{workload}/ops.parquet",
        tensors="results/workloads/{workload}/tensors.parquet",
    output:
        ops="results/ablations/monet/bn_epilogue/true/workloads/{workload}/ops.parquet",
        tensors="results/ablations/monet/bn_epilogue/true/workloads/{workload}/tensors.parquet",
    threads: 1
    resources:
        mem_mb=300,
        runtime=6,  # minutes; full run of 26 November 2026: longest job 2 s
    log:
        "results/logs/ablations/monet/bn_epilogue/true/workloads/{workload}.log",
    benchmark:
        "results/benchmarks/ablations/monet/bn_epilogue/true/workloads/{workload}.tsv"
    shell:
        "traincost bn-epilogue --ops {input.ops} --tensors {input.tensors} --out-ops {output.ops} "
        "--out-tensors {output.tensors} > {log} 2>&1"


# Section V under the assumption: the study's rules, their inputs and flags chosen by the wildcards (monet_tables,
# monet_schedule_flags, fusion_strategies in common.smk: the Plan's paths of an ablation run), writing under its root.
use rule fuse as monet_ablation_fuse with:
    output:
        groups="results/ablations/monet/{assumption}/{value}/fusion/{step}/limit{limit}_{types}.json",
        report="results/ablations/monet/{assumption}/{value}/fusion/{step}/limit{limit}_{types}.parquet",
    log:
        "results/logs/ablations/monet/{assumption}/{value}/fuse/{step}/limit{limit}_{types}.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/fuse/{step}/limit{limit}_{types}.tsv"


use rule compare_fusion as monet_ablation_compare_fusion with:
    output:
        table="results/ablations/monet/{assumption}/{value}/fusion/{step}/compare.parquet",
    log:
        "results/logs/ablations/monet/{assumption}/{value}/compare_fusion/{step}.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/compare_fusion/{step}.tsv"


use rule checkpoint_additivity as monet_ablation_checkpoint_additivity with:
    output:
        costs="results/ablations/monet/{assumption}/{value}/checkpoint/figure11/activation_costs.parquet",
        additivity="results/ablations/monet/{assumption}/{value}/checkpoint/additivity.parquet",
        recompute_check="results/ablations/monet/{assumption}/{value}/checkpoint/figure11/recompute_check.parquet",
    log:
        "results/logs/ablations/monet/{assumption}/{value}/checkpoint_additivity.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/checkpoint_additivity.tsv"


use rule checkpoint_study as monet_ablation_checkpoint_study with:
    output:
        costs="results/ablations/monet/{assumption}/{value}/checkpoint/activation_costs.parquet",
        milp="results/ablations/monet/{assumption}/{value}/checkpoint/milp.parquet",
        recompute_check="results/ablations/monet/{assumption}/{value}/checkpoint/recompute_check.parquet",
    log:
        "results/logs/ablations/monet/{assumption}/{value}/checkpoint_study.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/checkpoint_study.tsv"


use rule fusion_solver_runs as monet_ablation_fusion_solver_runs with:
    output:
        table="results/ablations/monet/{assumption}/{value}/fusion/solver_runs.parquet",
    log:
        "results/logs/ablations/monet/{assumption}/{value}/fusion_solver_runs.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/fusion_solver_runs.tsv"


use rule checkpoint_nsga as monet_ablation_checkpoint_nsga with:
    output:
        table="results/ablations/monet/{assumption}/{value}/checkpoint/nsga.parquet",
        summary="results/ablations/monet/{assumption}/{value}/checkpoint/nsga_summary.parquet",
    log:
        "results/logs/ablations/monet/{assumption}/{value}/checkpoint_nsga.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/checkpoint_nsga.tsv"


use rule monet_claims as monet_ablation_claims with:
    output:
        csv="results/ablations/monet/{assumption}/{value}/compare.csv",
        table=temp("results/ablations/monet/{assumption}/{value}/claims.parquet"),
    log:
        "results/logs/ablations/monet/{assumption}/{value}/claims.log",
    benchmark:
        "results/benchmarks/ablations/monet/{assumption}/{value}/claims.tsv"
