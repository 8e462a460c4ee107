// The baseline of benchmark 4: every page of the migrations list with Octokit, printed as one array.
import { Octokit } from '@octokit/core';
import { paginateRest } from '@octokit/plugin-paginate-rest';

const Client = Octokit.plugin(paginateRest);
const octokit = new Client({ auth: process.env.SVC_TOKEN, baseUrl: process.env.SVC_BASE_URL });
const all = await octokit.paginate('GET /orgs/{org}/migrations', {
  org: process.env.SVC_ORG,
  per_page: 100,
  headers: { accept: 'application/vnd.service+json', 'x-service-api-version': '2026-03-10' },
});
process.stdout.write(`${JSON.stringify(all, null, 2)}\n`);
