#include <random>
#include <algorithm>
#include <cstdio>
#include "host/graph_place.hpp"
using namespace gpuos; using namespace gpuos::detail;
int main(){
  std::mt19937_64 rng(7); std::uint32_t n=10000;
  std::vector<std::vector<std::uint32_t>> preds(n);
  for (std::uint32_t v = 1; v < n; ++v) {
    const std::uint32_t k = std::uniform_int_distribution<std::uint32_t>(1, 4)(rng);
    const std::uint32_t lo = v > 64 ? v - 64 : 0;
    for (std::uint32_t i = 0; i < k; ++i) {
      const auto p = std::uniform_int_distribution<std::uint32_t>(lo, v - 1)(rng);
      if (std::find(preds[v].begin(), preds[v].end(), p) == preds[v].end()) preds[v].push_back(p);
    }
  }
  Graph g; for (std::uint32_t v=0;v<n;++v) g.add_node(gpuos_task{GPUOS_OP_NOP,1,nullptr,0,0});
  for (std::uint32_t v=0;v<n;++v) for (auto p:preds[v]) g.add_edge(p,v);
  GraphPlan plan=plan_graph(g);
  Placement pl=place_graph_warps(plan,131,8);
  FILE* f=fopen("dag.txt","w");
  for (std::uint32_t v=0;v<n;++v){ fprintf(f,"%u",v); for(auto p:preds[v]) fprintf(f," %u",p); fprintf(f,"\n"); }
  fclose(f);
  f=fopen("lists.txt","w");
  for (unsigned r=0;r<pl.lists();++r){ for(unsigned i=pl.role_off[r];i<pl.role_off[r+1];++i) fprintf(f,"%u ",pl.items[i].node); fprintf(f,"\n"); }
  fclose(f);
}
