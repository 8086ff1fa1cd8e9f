// Validates every object of the YAML files in a folder (deploy/kubernetes) against the Kubernetes API schemas of
// kubernetes-models (and the Prometheus Operator's, for PodMonitor): an object of a kind or apiVersion not listed
// here, or one the schema rejects, fails with its file, kind and name. Run by tests/deploy:
//   node k8s_manifests.mjs DIR
import fs from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Service } from "kubernetes-models/v1/Service";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { HorizontalPodAutoscaler } from "kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler";
import { PodMonitor } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor";

const models = new Map([ConfigMap, PersistentVolumeClaim, Service, Deployment, HorizontalPodAutoscaler, PodMonitor]
  .map((model) => [`${model.apiVersion}/${model.kind}`, model]));

const dir = process.argv[2];
let checked = 0, failures = 0;
for (const file of fs.readdirSync(dir).filter((name) => name.endsWith(".yaml")).sort()) {
  const documents = parseAllDocuments(fs.readFileSync(path.join(dir, file), "utf8"));
  for (const document of documents) {
    if (document.errors.length > 0) {
      console.error(`${file}: YAML error: ${document.errors[0].message}`);
      failures++;
      continue;
    }
    const object = document.toJS();
    if (object === null) continue;
    const label = `${file}: ${object.kind} ${object.metadata?.name}`;
    const Model = models.get(`${object.apiVersion}/${object.kind}`);
    if (!Model) {
      console.error(`${label}: ${object.apiVersion} ${object.kind} is not a kind this check knows`);
      failures++;
      continue;
    }
    try {
      new Model(object).validate();
      checked++;
    } catch (error) {
      console.error(`${label}: ${error.message}`);
      failures++;
    }
  }
}
console.log(`${checked} objects valid, ${failures} failed`);
process.exit(failures === 0 && checked > 0 ? 0 : 1);
