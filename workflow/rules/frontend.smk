# torch model → ONNX → training step → primitive graph (and its check by execution) → Workload IR → memory, the onnx
# front end (MONET's method, every workload's default); or torch model → the step traced by torch (and its check by
# execution) → Workload IR, the torch front end (rule trace_step, workloads with `frontend: torch`).
#
# Threads: 1. Each front-end job uses about one core: with 2 threads its main thread does 84 to 95 % of its CPU work,
# the check's 61 %, and the second thread costs 10 to 45 % more CPU seconds (bench/frontend.py --rules
# resnet18_cifar --threads 2 and 1, back to back at load 10: the check took 91 s against 61 s with one thread). So
# two run side by side; torch and ONNX Runtime compute on the OMP_NUM_THREADS Snakemake sets to a job's threads
# (frontend/onnx/execute.py: intra_op_threads).
# Resources: `mem_mb` (the tool's; job_mem_mb adds Snakemake's own on a cluster, see common.smk) is 1.5 x the
# largest peak of the rule's jobs in a full run (`snakemake --cores 2`, config/config.yaml, 25 November 2026;
# tests/fixtures/benchmarks/full_run.csv), rounded up to 100 MB, or the value measured before on the quick config
# where that is larger; the peak is noted beside each value. Peak = the larger of Snakemake's benchmark max_rss of the
# job's process tree (sampled every 0.5 s for 15 s, then every 30 s, so it can miss a long job's peak) and the same
# tree sampled every 0.5 s throughout by bench/job_peaks.py (the jobs of the run's last hour). decompose and
# verify_decomposition, split after that run, were measured on their own the same day (bench/frontend.py --rules:
# each command's maximum RSS, load 9 to 11). `runtime` (minutes, what a cluster job asks) is 2 x the rule's longest
# job in that run, which shared 2 cores with other work, plus 5 minutes for Snakemake's start on a node.
# tests/integration/test_rule_resources.py checks both against the table.
# Memory grows with the model: each front-end rule's mem_mb is its default (1.5 x the peak of the workloads not listed
# in FRONTEND_PEAK_MB, or the earlier quick-config value if larger) or, for the full config's GPT-2 124M, VGG-16,
# AlexNet and ResNet-50 at batch 8, 1.5 x their own peak (FRONTEND_PEAK_MB in src/traincost/workflow/plan.py, measured with the rules'
# commands after this split).


rule export:
    conda:
        TRAINCOST_ENV
    input:
        model_files,
    output:
        onnx="results/graphs/{workload}/model.onnx",
    params:
        model=model_flags,
        batch=batch,
        seed=PLAN.seed,
    priority: export_first
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("export", 2200),  # peak 1,426 MB: ResNet-50; larger models: FRONTEND_PEAK_MB (traincost.workflow.plan)
        runtime=12,  # minutes; full run: longest job 206 s
    log:
        "results/logs/export/{workload}.log",
    benchmark:
        "results/benchmarks/export/{workload}.tsv",
    shell:
        "traincost export {params.model} --batch {params.batch} --seed {params.seed} --out {output.onnx} > {log} 2>&1"


rule train_graph:
    conda:
        TRAINCOST_ENV
    input:
        onnx=exported_model,  # one export per model and batch
    output:
        onnx="results/graphs/{workload}/train_step.onnx",
    params:
        optimizer=optimizer_flags,
        seed=PLAN.seed,
    priority: checkpoint_first
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("train_graph", 3600),  # peak 2,368 MB: ResNet-50 with Adam; larger models: FRONTEND_PEAK_MB (traincost.workflow.plan)
        runtime=8,  # minutes; full run: longest job 82 s
    log:
        "results/logs/train_graph/{workload}.log",
    benchmark:
        "results/benchmarks/train_graph/{workload}.tsv",
    shell:
        "traincost train-graph --in {input.onnx} {params.optimizer} --seed {params.seed} --out {output.onnx} > {log} 2>&1"


rule decompose:
    conda:
        TRAINCOST_ENV
    input:
        onnx=rules.train_graph.output.onnx,
    output:
        onnx="results/graphs/{workload}/train_step.decomposed.onnx",
        histogram="results/graphs/{workload}/op_histogram.parquet",
    params:
        seed=PLAN.seed,
    priority: checkpoint_first
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("decompose", 1200),  # peak 765 MB: ResNet-50 with Adam, alone; larger models: FRONTEND_PEAK_MB (traincost.workflow.plan)
        runtime=6,  # minutes; longest: VGG-16, 20 s (load 10)
    log:
        "results/logs/decompose/{workload}.log",
    benchmark:
        "results/benchmarks/decompose/{workload}.tsv",
    shell:
        "traincost decompose --in {input.onnx} --seed {params.seed} --histogram {output.histogram} --out {output.onnx} > {log} 2>&1"


# The decomposition checked by execution, beside the jobs that only read the decomposed graph; `all` asks for its
# table, and a check that fails stops the run with its one error line (the log names the node or tensor).
rule verify_decomposition:
    conda:
        TRAINCOST_ENV
    input:
        onnx=rules.train_graph.output.onnx,
        decomposed=rules.decompose.output.onnx,
    output:
        table=f"results/graphs/{{workload,{BUILT_BY_ONNX}}}/verification.parquet",
    params:
        seed=PLAN.seed,
        verify=verify_flag,
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("verify_decomposition", 3000),  # peak 1,978 MB: ResNet-50 with Adam; larger models: FRONTEND_PEAK_MB (traincost.workflow.plan)
        runtime=32,  # minutes; GPT-2 124M: 795 s (load 8 to 10)
    log:
        "results/logs/verify_decomposition/{workload}.log",
    benchmark:
        "results/benchmarks/verify_decomposition/{workload}.tsv",
    shell:
        "traincost verify-decomposition --in {input.onnx} --decomposed {input.decomposed} --seed {params.seed} "
        "{params.verify} --out {output.table} > {log} 2>&1"


rule lower:
    conda:
        TRAINCOST_ENV
    input:
        onnx=rules.decompose.output.onnx,
    output:
        ops=f"results/workloads/{{workload,{BUILT_BY_ONNX}}}/ops.parquet",
        tensors=f"results/workloads/{{workload,{BUILT_BY_ONNX}}}/tensors.parquet",
    priority: checkpoint_first
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("lower", 900),  # peak 562 MB: ResNet-50; larger models: FRONTEND_PEAK_MB (traincost.workflow.plan)
        runtime=6,  # minutes; full run: longest job 22 s
    log:
        "results/logs/lower/{workload}.log",
    benchmark:
        "results/benchmarks/lower/{workload}.tsv",
    params:
        attention=attention,
    shell:
        "traincost lower --in {input.onnx} --attention {params.attention} --ops {output.ops} --tensors {output.tensors} > {log} 2>&1"


# The torch front end: torch traces the step (forward, loss, backward, optimizer) and it is checked by execution against
# eager torch in the same job (the check reruns the whole step, so it is not worth a job of its own).
rule trace_step:
    conda:
        TRAINCOST_ENV
    input:
        model_files,
    output:
        ops=f"results/workloads/{{workload,{BUILT_BY_TORCH}}}/ops.parquet",
        tensors=f"results/workloads/{{workload,{BUILT_BY_TORCH}}}/tensors.parquet",
        table=f"results/graphs/{{workload,{BUILT_BY_TORCH}}}/verification.parquet",
    params:
        model=model_flags,
        batch=batch,
        optimizer=optimizer_flags,
        seed=PLAN.seed,
        verify=verify_flag,
    priority: checkpoint_first
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("trace_step", 3600),  # as train_graph (not yet in a full run's measurements)
        runtime=30,  # minutes; ResNet-18 CIFAR at batch 2: 40 s (load 3)
    log:
        "results/logs/trace_step/{workload}.log",
    benchmark:
        "results/benchmarks/trace_step/{workload}.tsv",
    shell:
        "traincost trace-step {params.model} --batch {params.batch} {params.optimizer} --seed {params.seed} {params.verify} "
        "--ops {output.ops} --tensors {output.tensors} --verification {output.table} > {log} 2>&1"


# The inference step (MONET's inference rows and sweeps): the model exported in eval mode, each BatchNorm folded into
# its convolution, no dropout and no loss; then the same decomposition (forward rewrites only) and lowering.
rule export_inference:
    conda:
        TRAINCOST_ENV
    input:
        model_files,
    output:
        onnx="results/graphs/{workload}/inference_step.onnx",
    params:
        model=model_flags,
        batch=batch,
        seed=PLAN.seed,
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("export", 2200),  # as export
        runtime=12,  # minutes; as export
    log:
        "results/logs/export_inference/{workload}.log",
    benchmark:
        "results/benchmarks/export_inference/{workload}.tsv",
    shell:
        "traincost export {params.model} --batch {params.batch} --seed {params.seed} --inference --out {output.onnx} > {log} 2>&1"


use rule decompose as decompose_inference with:
    input:
        onnx=rules.export_inference.output.onnx,
    output:
        onnx="results/graphs/{workload}/inference_step.decomposed.onnx",
        histogram="results/graphs/{workload}/inference_op_histogram.parquet",
    priority: 0
    log:
        "results/logs/decompose_inference/{workload}.log",
    benchmark:
        "results/benchmarks/decompose_inference/{workload}.tsv"


use rule lower as lower_inference with:
    input:
        onnx=rules.decompose_inference.output.onnx,
    output:
        ops=f"results/workloads/{{workload,{BUILT_BY_ONNX}}}/inference/ops.parquet",
        tensors=f"results/workloads/{{workload,{BUILT_BY_ONNX}}}/inference/tensors.parquet",
    priority: 0
    log:
        "results/logs/lower_inference/{workload}.log",
    benchmark:
        "results/benchmarks/lower_inference/{workload}.tsv"


# The torch front end's inference step: the eval-mode forward traced by torch, each BatchNorm after a convolution
# folded into it, checked against eager torch in the same job (one forward and its nudged reruns: seconds).
rule trace_inference:
    conda:
        TRAINCOST_ENV
    input:
        model_files,
    output:
        ops=f"results/workloads/{{workload,{BUILT_BY_TORCH}}}/inference/ops.parquet",
        tensors=f"results/workloads/{{workload,{BUILT_BY_TORCH}}}/inference/tensors.parquet",
        table=f"results/graphs/{{workload,{BUILT_BY_TORCH}}}/inference_verification.parquet",
    params:
        model=model_flags,
        batch=batch,
        seed=PLAN.seed,
        verify=verify_flag,
    threads: 1
    resources:
        mem_mb=frontend_mem_mb("export", 2200),  # as export (an eval-mode forward and its check)
        runtime=12,  # minutes; as export
    log:
        "results/logs/trace_inference/{workload}.log",
    benchmark:
        "results/benchmarks/trace_inference/{workload}.tsv",
    shell:
        "traincost trace-inference {params.model} --batch {params.batch} --seed {params.seed} {params.verify} "
        "--ops {output.ops} --tensors {output.tensors} --verification {output.table} > {log} 2>&1"


rule memory:
    conda:
        TRAINCOST_ENV
    input:
        ops=rules.lower.output.ops,
        tensors=rules.lower.output.tensors,
    output:
        table="results/workloads/{workload}/memory.parquet",
    threads: 1
    resources:
        mem_mb=job_mem_mb(300),  # full run: peak 160 MB
        runtime=6,  # minutes; full run: longest job 4 s
    log:
        "results/logs/memory/{workload}.log",
    benchmark:
        "results/benchmarks/memory/{workload}.tsv",
    shell:
        "traincost memory --ops {input.ops} --tensors {input.tensors} --out {output.table} > {log} 2>&1"
