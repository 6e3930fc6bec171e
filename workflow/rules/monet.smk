# MONET figures. Figure 3: peak memory breakdown of ResNet-50 training, checked against torch.
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


rule measure_memory:
    conda:
        TRAINCOST_ENV
    output:
        table="results/monet/torch_memory/{workload}.parquet",
    params:
        model=zoo_model,
        batch=batch,
        options=model_options,
        optimizer=optimizer_flags,
        seed=PLAN.seed,
    threads: 1  # torch on more threads: 1.1 cores used of 2 in the full run of 26 November 2026
    resources:
        mem_mb=frontend_mem_mb("measure_memory", 1300),  # peak 859 MB: ResNet-50 with Adam; batch 8: FRONTEND_PEAK_MB (traincost.workflow.plan)
        runtime=7,  # minutes; full run: longest job 42 s
    log:
        "results/logs/measure_memory/{workload}.log",
    benchmark:
        "results/benchmarks/measure_memory/{workload}.tsv",
    shell:
        "traincost measure-memory --model {params.model} --batch {params.batch} --options {params.options:q} "
        "{params.optimizer} --seed {params.seed} --out {output.table} > {log} 2>&1"


rule compare_memory:
    conda:
        TRAINCOST_ENV
    input:
        ours=expand(rules.memory.output.table, workload=PLAN.figure3_workloads),
        torch=expand(rules.measure_memory.output.table, workload=PLAN.figure3_workloads),
    output:
        table="results/monet/figure3_memory_compare.parquet",
        csv=report(
            "results/monet/figure3_memory_compare.csv",
            caption="../report/figure3_compare.rst",
            category="MONET",
            subcategory="Tables",
        ),
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # full run: peak 133 MB
        runtime=6,  # minutes; full run: longest job 4 s
    log:
        "results/logs/compare_memory.log",
    benchmark:
        "results/benchmarks/compare_memory.tsv",
    shell:
        "traincost compare-memory --ours {input.ours} --torch {input.torch} --out {output.table} --csv {output.csv} > {log} 2>&1"


rule figure3:
    conda:
        TRAINCOST_ENV
    input:
        table=rules.compare_memory.output.table,
    output:
        png=report(
            "results/monet/figure3.png",
            caption="../report/figure3.rst",
            category="MONET",
            subcategory="Figures",
        ),
        pdf="results/monet/figure3.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # full run: peak 242 MB
        runtime=6,  # minutes; full run: longest job 22 s
    log:
        "results/logs/figure3.log",
    benchmark:
        "results/benchmarks/figure3.tsv",
    shell:
        "traincost plot-memory --in {input.table} --out {output.png} {output.pdf} > {log} 2>&1"


# MONET section IV: hardware sweeps (inference and training) and Figures 1, 8, 9 with claims.csv.


# One shard of a sweep's grid; an ablation run (ablations.smk) re-uses the rule for a whole sweep, where
# {params.shard} is empty and {params.resident}, {params.tiling} or {params.allocation} the assumption.
rule hardware_sweep_shard:
    conda:
        TRAINCOST_ENV
    input:
        unpack(sweep_inputs),
    output:
        table="results/monet/sweeps/{sweep}/{step}/shard{index}-of-{shards}.parquet",
    wildcard_constraints:
        index=r"\d+",
        shards=r"\d+",
    params:
        grid=sweep_grid,
        mode=sweep_mode,
        fusion=fusion_flag,
        resident=sweep_resident_fraction,
        tiling=tiling_flag,
        objective=sweep_objective,
        allocation=sweep_allocation,
        shard=shard_flag,
        max_configs=sweep_max_configs_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(700),  # full run of 29 November 2026: peak 401 MB (edge_tpu_resnet18, shard 3 of 4)
        runtime=6,  # minutes; full run: longest job 13 s
    log:
        "results/logs/hardware_sweep/{sweep}/{step}/shard{index}-of-{shards}.log",
    benchmark:
        "results/benchmarks/hardware_sweep/{sweep}/{step}/shard{index}-of-{shards}.tsv",
    shell:
        "traincost sweep --ops {input.ops} --tensors {input.tensors} --hardware {input.hardware} "
        "--grid {params.grid:q} --step {wildcards.step} --mode {params.mode} {params.fusion} "
        "--resident-fraction {params.resident}{params.tiling} --mapping-objective {params.objective} --allocation {params.allocation}{params.shard} {params.max_configs} "
        "--out {output.table} > {log} 2>&1"


rule hardware_sweep_merge:
    conda:
        TRAINCOST_ENV
    input:
        sweep_shards,
    output:
        table="results/monet/sweeps/{sweep}/{step}.parquet",
    params:
        shards=sweep_shards,
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # full run: peak 149 MB
        runtime=6,  # minutes; full run: longest job 3 s
    log:
        "results/logs/hardware_sweep/{sweep}/{step}.log",
    benchmark:
        "results/benchmarks/hardware_sweep/{sweep}/{step}.tsv",
    shell:
        "traincost concat --in {params.shards} --out {output.table} > {log} 2>&1"


rule figure1:
    conda:
        TRAINCOST_ENV
    input:
        unpack(edge_tables),
    output:
        png=report(
            "results/monet/figure1.png",
            caption="../report/figure1.rst",
            category="MONET",
            subcategory="Figures",
        ),
        pdf="results/monet/figure1.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(500),  # full run: peak 277 MB
        runtime=6,  # minutes; full run: longest job 17 s
    log:
        "results/logs/figure1.log",
    benchmark:
        "results/benchmarks/figure1.tsv",
    shell:
        "traincost plot-sweep --figure energy-latency-compute --in {input.inference} {input.training} "
        "--title 'ResNet-18 (3x32x32) on Edge TPU configurations' --out {output.png} {output.pdf} > {log} 2>&1"


rule figure8:
    conda:
        TRAINCOST_ENV
    input:
        unpack(edge_tables),
    output:
        png=report(
            "results/monet/figure8.png",
            caption="../report/figure8.rst",
            category="MONET",
            subcategory="Figures",
        ),
        pdf="results/monet/figure8.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(500),  # full run: peak 317 MB
        runtime=6,  # minutes; full run: longest job 27 s
    log:
        "results/logs/figure8.log",
    benchmark:
        "results/benchmarks/figure8.tsv",
    shell:
        "traincost plot-sweep --figure compute-resources --in {input.inference} {input.training} "
        "--title 'ResNet-18 on Edge TPU: energy and latency vs compute resources' --out {output.png} {output.pdf} > {log} 2>&1"


rule figure9:
    conda:
        TRAINCOST_ENV
    input:
        unpack(fusemax_tables),
    output:
        png=report(
            "results/monet/figure9.png",
            caption="../report/figure9.rst",
            category="MONET",
            subcategory="Figures",
        ),
        pdf="results/monet/figure9.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # full run: peak 264 MB
        runtime=6,  # minutes; full run: longest job 23 s
    log:
        "results/logs/figure9.log",
    benchmark:
        "results/benchmarks/figure9.tsv",
    shell:
        "traincost plot-sweep --figure energy-latency-bandwidth --in {input.inference} {input.training} "
        "--title 'Small GPT-2 on FuseMax configurations' --out {output.png} {output.pdf} > {log} 2>&1"


# Figures 1, 8 and 9 as interactive pages beside the static figures: every configuration a point to hover (its row),
# to compare with another (click two) and to filter by a swept parameter; no network or library needed.
rule figures1_8_interactive:
    conda:
        TRAINCOST_ENV
    input:
        unpack(edge_tables),
    output:
        html=report(
            "results/monet/figures1_8.html",
            caption="../report/figures1_8_interactive.rst",
            category="MONET",
            subcategory="Design spaces (interactive)",
        ),
    params:
        parameters=PLAN.monet_sweep_parameters("edge_tpu"),
    threads: 1
    resources:
        mem_mb=job_mem_mb(500),  # as figure8, which reads the same tables (not in the full run's table yet)
        runtime=6,  # minutes; the quick config's job: 1 s
    log:
        "results/logs/figures1_8_interactive.log",
    benchmark:
        "results/benchmarks/figures1_8_interactive.tsv",
    shell:
        "traincost design-space --figure edge-tpu --in {input.inference} {input.training} --parameters {params.parameters} "
        "--title 'MONET Figures 1 and 8: ResNet-18 (3x32x32) on Edge TPU configurations' --out {output.html} > {log} 2>&1"


rule figure9_interactive:
    conda:
        TRAINCOST_ENV
    input:
        unpack(fusemax_tables),
    output:
        html=report(
            "results/monet/figure9.html",
            caption="../report/figure9_interactive.rst",
            category="MONET",
            subcategory="Design spaces (interactive)",
        ),
    params:
        parameters=PLAN.monet_sweep_parameters("fusemax"),
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # as figure9, which reads the same tables (not in the full run's table yet)
        runtime=6,  # minutes; the quick config's job: 1 s
    log:
        "results/logs/figure9_interactive.log",
    benchmark:
        "results/benchmarks/figure9_interactive.tsv",
    shell:
        "traincost design-space --figure fusemax --in {input.inference} {input.training} --parameters {params.parameters} "
        "--title 'MONET Figure 9: small GPT-2 on FuseMax configurations' --out {output.html} > {log} 2>&1"


# MONET's paper-vs-ours table; an ablation run (ablations.smk) re-uses the rule, {params.assume} its assumption.
rule monet_claims:
    conda:
        TRAINCOST_ENV
    input:
        unpack(section5_inputs),
        unpack(monet_claims_sweeps),
    output:
        csv=report(
            COMPARISON_CSVS["monet"],
            caption="../report/claims.rst",
            category="MONET",
            subcategory="Paper vs ours",
        ),
        table="results/monet/claims.parquet",
    params:
        section5=section5_flags,
        assume=assume_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # full run: peak 173 MB; the quick config's 400 is larger
        runtime=6,  # minutes; full run: longest job 5 s
    log:
        "results/logs/monet_claims.log",
    benchmark:
        "results/benchmarks/monet_claims.tsv",
    shell:
        "traincost claims --edge-inference {input.edge_inference} --edge-training {input.edge_training} "
        "--gpt-inference {input.gpt_inference} --gpt-training {input.gpt_training} {params.section5}{params.assume} "
        "--csv {output.csv} --out {output.table} > {log} 2>&1"


# MONET Figure 10: layer-fusion solver (CP-SAT) vs no fusion and the manual fusion.


rule fuse:
    conda:
        TRAINCOST_ENV
    input:
        unpack(fusion_inputs),
    output:
        groups="results/monet/fusion/{step}/limit{limit}_{types}.json",
        report="results/monet/fusion/{step}/limit{limit}_{types}.parquet",
    wildcard_constraints:
        limit=r"\d+",
        types="typed|free",
    params:
        types=type_limits_flag,
        **PLAN.fusion_params("objective", "time_limit"),
        seed=PLAN.seed,
        resident=monet_schedule_flags,
    # CP-SAT solves on 2 workers, but for 0.02-0.04 s of a job's 1-2 s: the job is one core's work, and a job of 2
    # threads waits for both cores to be free, which on 2 cores comes only when nothing else is ready
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # full run: peak 185 MB
        runtime=6,  # minutes; full run: longest job 6 s
    log:
        "results/logs/fuse/{step}/limit{limit}_{types}.log",
    benchmark:
        "results/benchmarks/fuse/{step}/limit{limit}_{types}.tsv",
    shell:
        "traincost fuse --ops {input.ops} --tensors {input.tensors} --hardware {input.hardware} --step {wildcards.step} "
        "--max-length {wildcards.limit} {params.types} --objective {params.objective} --time-limit {params.time_limit} "
        "--seed {params.seed} {params.resident} --out {output.groups} --report {output.report} > {log} 2>&1"


rule compare_fusion:
    conda:
        TRAINCOST_ENV
    input:
        unpack(compare_fusion_inputs),
    output:
        table="results/monet/fusion/{step}/compare.parquet",
    params:
        strategies=strategy_flags,
        **PLAN.fusion_params("mode"),
        resident=compare_fusion_flags,
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # full run: peak 151 MB
        runtime=6,  # minutes; full run: longest job 13 s
    log:
        "results/logs/compare_fusion/{step}.log",
    benchmark:
        "results/benchmarks/compare_fusion/{step}.tsv",
    shell:
        "traincost compare-fusion --ops {input.ops} --tensors {input.tensors} --hardware {input.hardware} --step {wildcards.step} "
        "--mode {params.mode} --strategy base= --strategy manual={input.manual} {params.strategies} {params.resident} --out {output.table} > {log} 2>&1"


rule fusion_solver_runs:
    conda:
        TRAINCOST_ENV
    input:
        fusion_solver_reports,
    output:
        table="results/monet/fusion/solver_runs.parquet",
    threads: 1
    resources:
        mem_mb=job_mem_mb(200),  # full run: peak 130 MB
        runtime=6,  # minutes; full run: longest job 2 s
    log:
        "results/logs/fusion_solver_runs.log",
    benchmark:
        "results/benchmarks/fusion_solver_runs.tsv",
    shell:
        "traincost concat --in {input} --out {output.table} > {log} 2>&1"


rule figure10:
    conda:
        TRAINCOST_ENV
    input:
        expand("results/monet/fusion/{step}/compare.parquet", step=STEPS),
    output:
        png=report(
            "results/monet/figure10.png",
            caption="../report/figure10.rst",
            category="MONET",
            subcategory="Figures",
        ),
        pdf="results/monet/figure10.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # full run: peak 263 MB
        runtime=6,  # minutes; full run: longest job 14 s
    log:
        "results/logs/figure10.log",
    benchmark:
        "results/benchmarks/figure10.tsv",
    shell:
        "traincost plot-fusion --in {input} --title 'ResNet-18 on the baseline Edge TPU: fusion strategies' "
        "--out {output.png} {output.pdf} > {log} 2>&1"


rule fused_graph_picture:
    conda:
        TRAINCOST_ENV
    input:
        unpack(fusion_workload_tables),
        groups="results/monet/fusion/{step}/limit{limit}_{types}.json",
    output:
        png=report(
            "results/monet/fusion/{step}/fused_{step}_limit{limit}_{types}.png",
            caption="../report/fused_graph.rst",
            category="MONET",
            subcategory="Figures",
        ),
    threads: 1
    resources:
        mem_mb=job_mem_mb(500),  # full run: peak 267 MB
        runtime=6,  # minutes; full run: longest job 9 s
    log:
        "results/logs/fused_graph/{step}/limit{limit}_{types}.log",
    benchmark:
        "results/benchmarks/fused_graph/{step}/limit{limit}_{types}.tsv",
    shell:
        "traincost plot-fused-graph --ops {input.ops} --tensors {input.tensors} --step {wildcards.step} --groups {input.groups} "
        "--title '{wildcards.step}, limit {wildcards.limit}' --out {output.png} > {log} 2>&1"


# MONET Figure 11 and the MILP of equation 6: activation checkpointing on the baseline Edge TPU. Figure 11 on its own
# workload (section V-B: "a ResNet18 model on a base Edge TPU accelerator, as detailed in Section IV-A"), the MILP on
# Figure 12's.


rule checkpoint_additivity:
    conda:
        TRAINCOST_ENV
    input:
        unpack(figure11_inputs),
        graph=figure11_graph,  # rewrites run on it (an ONNX-built workload's)
    output:
        costs="results/monet/checkpoint/figure11/activation_costs.parquet",
        additivity="results/monet/checkpoint/additivity.parquet",
        recompute_check="results/monet/checkpoint/figure11/recompute_check.parquet",
    params:
        **PLAN.checkpoint_params(),
        resident=monet_schedule_flags,
        graph=graph_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(1700),  # as checkpoint_study
        runtime=6,  # minutes; as checkpoint_study
    log:
        "results/logs/checkpoint_additivity.log",
    benchmark:
        "results/benchmarks/checkpoint_additivity.tsv",
    shell:
        "traincost checkpoint-study --ops {input.ops} --tensors {input.tensors} --hardware {input.hardware} --mode {params.mode} "
        "--fusion-length {params.length} --fusion-scope {params.scope} {params.resident} --costs {output.costs} "
        "--additivity {output.additivity} {params.graph} --recompute-check {output.recompute_check} "
        "--seed {params.seed} > {log} 2>&1"


rule checkpoint_study:
    conda:
        TRAINCOST_ENV
    input:
        unpack(checkpoint_inputs),
        graph=checkpoint_graph,  # rewrites run on it (an ONNX-built workload's)
    output:
        costs="results/monet/checkpoint/activation_costs.parquet",
        milp="results/monet/checkpoint/milp.parquet",
        recompute_check="results/monet/checkpoint/recompute_check.parquet",
    params:
        **PLAN.checkpoint_params("budgets"),
        resident=monet_schedule_flags,
        graph=graph_flag,
    threads: 1
    resources:
        mem_mb=job_mem_mb(1700),  # peak 1,117 MB with its 8 recompute rewrites run in ONNX Runtime (the full run's 808 MB had none)
        runtime=6,  # minutes; full run: longest job 20 s (28 s with the rewrites run)
    log:
        "results/logs/checkpoint_study.log",
    benchmark:
        "results/benchmarks/checkpoint_study.tsv",
    shell:
        "traincost checkpoint-study --ops {input.ops} --tensors {input.tensors} --hardware {input.hardware} --mode {params.mode} "
        "--fusion-length {params.length} --fusion-scope {params.scope} --budgets {params.budgets} {params.resident} --costs {output.costs} "
        "--milp {output.milp} {params.graph} --recompute-check {output.recompute_check} "
        "--seed {params.seed} > {log} 2>&1"


rule figure11:
    conda:
        TRAINCOST_ENV
    input:
        table=rules.checkpoint_additivity.output.additivity,
    output:
        png=report(
            "results/monet/figure11.png",
            caption="../report/figure11.rst",
            category="MONET",
            subcategory="Figures",
        ),
        pdf="results/monet/figure11.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(400),  # full run: peak 240 MB
        runtime=6,  # minutes; full run: longest job 15 s
    log:
        "results/logs/figure11.log",
    benchmark:
        "results/benchmarks/figure11.tsv",
    shell:
        "traincost plot-checkpoint --in {input.table} --out {output.png} {output.pdf} > {log} 2>&1"


rule checkpoint_nsga:
    conda:
        TRAINCOST_ENV
    input:
        unpack(checkpoint_inputs),
    output:
        table="results/monet/checkpoint/nsga.parquet",
        summary="results/monet/checkpoint/nsga_summary.parquet",
    params:
        **PLAN.checkpoint_params("population", "generations", "tolerance"),
        resident=monet_schedule_flags,
    # One process: with 2 worker processes it used 1.66 of its 2 cores (the NSGA-II operators run between the
    # generations' evaluations), and as a job of 2 threads it could only start once nothing else was ready: the last
    # 258 s of the full run on 2 cores. On one thread, and first among the ready jobs, it runs beside the others.
    threads: 1
    priority: FIRST
    resources:
        mem_mb=job_mem_mb(1900),  # peak 1,259 MB on the quick config in CI (main process and 2 workers, RSS summed); full run 610 MB
        runtime=46,  # minutes; full run: longest job 1,225 s
    log:
        "results/logs/checkpoint_nsga.log",
    benchmark:
        "results/benchmarks/checkpoint_nsga.tsv",
    shell:
        "traincost checkpoint-nsga --ops {input.ops} --tensors {input.tensors} --hardware {input.hardware} --mode {params.mode} "
        "--fusion-length {params.length} --fusion-scope {params.scope} --workers {threads} --population {params.population} "
        "--generations {params.generations} --tolerance {params.tolerance} --seed {params.seed} {params.resident} --out {output.table} --summary {output.summary} > {log} 2>&1"


rule figure12:
    conda:
        TRAINCOST_ENV
    input:
        nsga=rules.checkpoint_nsga.output.table,
        summary=rules.checkpoint_nsga.output.summary,
        milp=rules.checkpoint_study.output.milp,
        claims=rules.monet_claims.output.csv,  # the paper's saving, drawn beside ours
    output:
        png=report(
            "results/monet/figure12.png",
            caption="../report/figure12.rst",
            category="MONET",
            subcategory="Figures",
        ),
        pdf="results/monet/figure12.pdf",
    threads: 1
    resources:
        mem_mb=job_mem_mb(500),  # full run: peak 271 MB
        runtime=6,  # minutes; full run: longest job 20 s
    log:
        "results/logs/figure12.log",
    benchmark:
        "results/benchmarks/figure12.tsv",
    shell:
        "traincost plot-pareto --nsga {input.nsga} --milp {input.milp} --summary {input.summary} "
        "--claims {input.claims} "
        "--title 'Activation checkpointing, ResNet-18 training on the Edge TPU' --out {output.png} {output.pdf} > {log} 2>&1"


# Figure 12 as an interactive page beside the static one: every NSGA-II evaluation a point to hover (its recompute
# choice and costs), to compare with another (click two) and to filter (front or not, how many tensors recomputed).
rule figure12_interactive:
    conda:
        TRAINCOST_ENV
    input:
        nsga=rules.checkpoint_nsga.output.table,
        summary=rules.checkpoint_nsga.output.summary,
    output:
        html=report(
            "results/monet/figure12.html",
            caption="../report/figure12_interactive.rst",
            category="MONET",
            subcategory="Design spaces (interactive)",
        ),
    threads: 1
    resources:
        mem_mb=job_mem_mb(500),  # as figure12, which reads the same tables (not in the full run's table yet)
        runtime=6,  # minutes; the quick config's job: 1 s
    log:
        "results/logs/figure12_interactive.log",
    benchmark:
        "results/benchmarks/figure12_interactive.tsv",
    shell:
        "traincost design-space-pareto --nsga {input.nsga} --summary {input.summary} "
        "--title 'MONET Figure 12: activation checkpointing, ResNet-18 training on the Edge TPU' --out {output.html} > {log} 2>&1"
