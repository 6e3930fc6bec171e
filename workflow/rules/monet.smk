# MONET figures. Figure 3: peak memory breakdown of ResNet-50 training, checked against torch.


rule measure_memory:
    output:
        table="results/monet/torch_memory/{workload}.parquet",
    params:
        model=lambda w: workload(w)["model"],
        batch=lambda w: workload(w)["batch"],
        options=lambda w: json.dumps(workload(w).get("options", {}), sort_keys=True),
        optimizer=optimizer_flags,
        seed=config["seed"],
    threads: workflow.cores
    log:
        "results/logs/measure_memory/{workload}.log",
    shell:
        "traincost measure-memory --model {params.model} --batch {params.batch} --options {params.options:q} "
        "{params.optimizer} --seed {params.seed} --out {output.table} > {log} 2>&1"


rule compare_memory:
    input:
        ours=expand(rules.memory.output.table, workload=config["figure3"]["workloads"]),
        torch=expand(rules.measure_memory.output.table, workload=config["figure3"]["workloads"]),
    output:
        table="results/monet/figure3_memory_compare.parquet",
        csv=report("results/monet/figure3_memory_compare.csv", caption="../report/figure3_compare.rst", category="MONET"),
    log:
        "results/logs/compare_memory.log",
    shell:
        "traincost compare-memory --ours {input.ours} --torch {input.torch} --out {output.table} --csv {output.csv} > {log} 2>&1"


rule figure3:
    input:
        table=rules.compare_memory.output.table,
    output:
        png=report("results/monet/figure3.png", caption="../report/figure3.rst", category="MONET"),
        pdf="results/monet/figure3.pdf",
    log:
        "results/logs/figure3.log",
    shell:
        "traincost plot-memory --in {input.table} --out {output.png} {output.pdf} > {log} 2>&1"
